"""jax_fhe.nn: the ResNet-20 reference, the polynomial ReLU, the packed program (numpy) against
the float model, and a small CNN encrypted end to end on the INSECURE toy presets."""
import dataclasses
import pathlib

import numpy as np
import pytest

from jax_fhe import ckks, circuits, nn
from jax_fhe.nn import activation, compiler
from jax_fhe.rns import HostRandom

DATA = pathlib.Path(__file__).resolve().parents[1] / "examples" / "data"
SMALL = (("conv", 4, 1), ("block", 8, 2))          # 8x8x2 input: conv, strided block (option A)
TINY = (("conv", 2, 1), ("conv", 4, 2))            # the encrypted 2-layer CNN


def _small(seed=0, spec=SMALL, cin=2):
    g = np.random.default_rng(seed)
    return nn.init_params(spec, cin, 3, g), g.normal(size=(6, 8, 8, cin))


def test_layout_is_a_bijection_into_the_slots():
    for c, h, w, k in [(16, 32, 32, 1), (32, 16, 16, 2), (64, 8, 8, 4), (3, 4, 4, 2)]:
        idx = compiler.layout(c, h, w, k)
        assert len(np.unique(idx)) == idx.size and idx.min() == 0
        assert idx.max() < -(-c // (k * k)) * k * k * h * w
    assert compiler.layout(4, 2, 2, 2)[:, 0, 0].tolist() == [0, 1, 4, 5]   # 4 channels in a 2x2 block


def test_packed_program_equals_the_float_model():
    """simulate() with the exact ReLU (the packing, strides, option-A shortcut, the bound folding,
    pool + dense, all in diagonal form) equals forward() to float64 rounding."""
    params, x = _small()
    bounds = compiler.calibrate(SMALL, params, x)
    act = activation.PolyReLU(sign=activation.composite_sign((7, 15, 15), 2.0 ** -7))
    p = compiler.plan(SMALL, params, ckks.preset("n16-boot"), act, bounds, input_shape=(8, 8, 2), boot_level=13)
    exact = dataclasses.replace(p, act=nn.model.relu)
    ref = nn.forward(SMALL, params, x)
    np.testing.assert_allclose(compiler.simulate(exact, x), ref, atol=1e-12 * np.abs(ref).max())
    assert p.slots == 256 and p.bootstraps == 3 and p.out_level == 12
    poly = compiler.polynomial_forward(SMALL, params, x, act, bounds)
    np.testing.assert_allclose(compiler.simulate(p, x), poly, atol=1e-12 * np.abs(ref).max())
    approx = np.abs(poly - ref).max()                               # the polynomial ReLU's effect
    assert 0 < approx < 2.0 ** -8 * np.abs(ref).max()
    with pytest.raises(ValueError, match="bounds"):
        compiler.plan(SMALL, params, ckks.preset("n16-boot"), act, bounds[:-1], input_shape=(8, 8, 2))
    with pytest.raises(ValueError, match="levels"):
        compiler.plan(SMALL, params, ckks.preset("toy-boot-n12"), act, bounds, input_shape=(8, 8, 2), boot_level=2)


def test_composite_sign_relu_bound():
    """(7, 15, 15) on [2^-7, 1]: |sign error| <= 2^-13, |ReLU error| <= 2^-10 on [-1, 1]
    (measured 9.8e-5 and 9.2e-4), depth 3 + 4 + 4 + 1 = 12."""
    s = activation.composite_sign((7, 15, 15), 2.0 ** -7)
    act = activation.PolyReLU(sign=s)
    assert s.depth == 11 and act.depth == 12
    assert s.error < 2.0 ** -13 and act.bound < 2.0 ** -10
    x = np.linspace(-1, 1, 1001)
    assert np.abs(act(x) - np.maximum(x, 0)).max() <= act.bound + 1e-12
    with pytest.raises(ValueError, match="odd"):
        activation.composite_sign((8, 15))
    with pytest.raises(ValueError, match="exactly one"):
        activation.PolyReLU()


def test_polynomial_reference_diverges_outside_its_interval_as_encrypted():
    """The float reference evaluates the polynomials the ciphertexts get, not clipped copies:
    outside [-1, 1] it diverges (a clipped reference hid the images whose encrypted result
    was wrong: ResNet-20 with poly31 put 8 of the 512 images outside their bounds)."""
    act = activation.PolyReLU.direct(31)
    x = np.array([-1.2, -1.09, 1.09, 1.2])
    np.testing.assert_array_equal(act(x), np.real(act.poly(x)))
    assert act(np.array([1.09]))[0] > 10 and act(np.array([1.2]))[0] > 1000     # ReLU gives 1.09, 1.2
    comp = activation.PolyReLU(sign=activation.composite_sign((7, 15), 2.0 ** -6))
    assert not np.abs(comp(np.array([2.0])) - 2.0)[0] < 1                            # diverged (or inf)
    inside = np.linspace(-1, 1, 101)
    assert np.abs(act(inside) - np.maximum(inside, 0)).max() <= act.bound + 1e-12


def test_ratio_finds_images_outside_their_bounds():
    params, x = _small()
    bounds = compiler.calibrate(SMALL, params, x)          # margin 1.25 over these very images
    act = activation.PolyReLU.direct(31)
    poly0, r = compiler.polynomial_forward(SMALL, params, x, act, bounds, with_ratio=True)
    assert r.shape == (len(x),) and np.all(r <= 1 / 1.25 + 1e-6) and r.max() > 0.5
    loud = x.copy()
    loud[2] *= 2.5                                         # one image far outside the calibration
    poly, r2 = compiler.polynomial_forward(SMALL, params, loud, act, bounds, with_ratio=True)
    assert r2[2] > 1 and np.all(np.delete(r2, 2) == np.delete(r, 2))
    np.testing.assert_array_equal(poly0, compiler.polynomial_forward(SMALL, params, x, act, bounds))
    relu = compiler.polynomial_forward(SMALL, params, loud, nn.model.relu, bounds)
    assert not np.abs(poly[2] - relu[2]).max() < 1                 # the image's logits diverged
    np.testing.assert_allclose(np.delete(poly, 2, 0), np.delete(relu, 2, 0), atol=0.05 * np.abs(relu).max())
    assert compiler.polynomial_forward(SMALL, params, loud[2], act, bounds, with_ratio=True)[1].shape == (1,)   # one image [H, W, C]


def test_flax_module_equals_numpy_reference():
    """The Flax CNN (float32) of a small spec with a strided block equals forward()."""
    pytest.importorskip("flax")
    import jax
    import jax.numpy as jnp
    params, x = _small()
    module = nn.model.CNN(spec=SMALL, classes=3)
    with jax.default_matmul_precision("float32"):   # GPUs default to TF32 convolutions
        got = np.asarray(module.apply(nn.model.to_flax(params), jnp.asarray(x, jnp.float32)))
    ref = nn.forward(SMALL, params, x)
    assert np.abs(got - ref).max() < 1e-5 * np.abs(ref).max()
    init = jax.eval_shape(module.init, jax.random.PRNGKey(0), jnp.zeros((1, 8, 8, 2)))   # names, no compute
    assert sorted(nn.model.from_flax(jax.tree_util.tree_map(lambda a: np.zeros(a.shape), init))) == sorted(params)


@pytest.mark.slow
def test_resnet20_flax_equals_numpy():
    pytest.importorskip("flax")
    import jax
    import jax.numpy as jnp
    params = nn.load_resnet20(DATA / "resnet20_cifar10.npz")
    x, y = nn.load_cifar10(DATA / "cifar10_test_512.npz", 16)
    ref = nn.forward(nn.RESNET20_SPEC, params, x)
    got = np.asarray(jax.jit(nn.model.CNN().apply)(nn.model.to_flax(params), jnp.asarray(x, jnp.float32)))
    assert np.abs(got - ref).max() < 1e-3 * np.abs(ref).max()
    assert (ref.argmax(1) == y).mean() >= 0.8


@pytest.mark.slow
def test_resnet20_float_accuracy_512():
    params = nn.load_resnet20(DATA / "resnet20_cifar10.npz")
    x, y = nn.load_cifar10(DATA / "cifar10_test_512.npz")
    assert (nn.forward(nn.RESNET20_SPEC, params, x).argmax(1) == y).sum() == 467


def _encrypted(ctx, boot: bool, compact: bool | None = False, encoded_bytes: int | None = None):
    g = np.random.default_rng(3)
    params, x = nn.init_params(TINY, 1, 3, g), g.normal(size=(6, 4, 4, 1))
    bounds = compiler.calibrate(TINY, params, x)
    act = activation.PolyReLU.direct(3)
    rng = HostRandom.insecure_deterministic(7)
    keys = ckks.keygen(ctx, rng)
    b = None
    if boot:
        probe = compiler.plan(TINY, params, ctx.params, act, bounds, input_shape=(4, 4, 1))
        b = circuits.make_bootstrapper(ctx, circuits.BootstrapConfig(slots=probe.slots))
    p = compiler.plan(TINY, params, ctx.params, act, bounds, input_shape=(4, 4, 1),
                      boot_level=None if b is None else b.output_level,
                      start_level=None if b is not None else ctx.params.max_level)
    model = compiler.compile_model(p, ctx, b, compact=compact, encoded_bytes=encoded_bytes)
    linear = [i for i, op in enumerate(p.ops) if op.kind == "linear"]
    if compact is not None:
        assert model.compact == (tuple(linear) if compact else ())
    assert all(model.transforms[i].compact == (i in model.compact) for i in linear)
    ek = compiler.gen_keys(ctx, keys.secret, p, b, rng)
    # the layers' own rotation keys hold the levels they rotate at only (the bootstrap's: all,
    # but SlotToCoeff's own: its start level)
    top = max(op.level for op in p.ops if op.kind in ("linear", "rotsum"))
    assert p.rotation_level == top
    held = lambda level: tuple(sorted(set().union(*(ctx.params.rows(lv) for lv in range(level + 1)))  # noqa: E731
                                      | set(ctx.params.special_rows)))
    for s, key in ek[0].rotations.items():
        own = b is None or s not in ek[1].evk.rotations or (s in b.stc_only_steps() and top > b.levels[2])
        want = held(top) if own else held(b.levels[2]) if s in b.stc_only_steps() else held(ctx.params.max_level)
        assert key.held_rows() == want, s
    n = 1 if boot else 3   # several images stream (the next encrypted while one runs): rows in order
    logits, _ = compiler.run(model, x[:n], ek, keys.public, keys.secret, rng)
    # the staged runner (one jitted call per op) computes the same bits as the whole program
    ct = compiler.encrypt_image(x[1], p, ctx, keys.public, rng)
    timings = {}
    staged = model.staged(ct, ek, timings=timings)
    np.testing.assert_array_equal(np.asarray(staged.data), np.asarray(model(ct, ek).data))
    assert set(timings) == {op.name for op in p.ops} | ({"bootstrap"} if p.bootstraps else set())
    if not boot:   # a batch of two images in one vmapped call: the same bits as one call each
        cts = compiler.encrypt_image(x[2:4], p, ctx, keys.public, rng)
        assert cts.data.shape[0] == 2
        want = np.stack([np.asarray(model(cts[i], ek).data) for i in range(2)])
        np.testing.assert_array_equal(np.asarray(model.batch(cts, ek).data), want)
        np.testing.assert_array_equal(np.asarray(model.batch(cts, ek, staged=True).data), want)
    return p, logits, compiler.simulate(p, x[:n])


def test_encrypted_small_cnn_toy(toy_boot_context):
    """2-layer CNN (4x4x1 -> conv 2 -> conv 4 stride 2 -> dense + pool), degree-3 polynomial
    ReLU, no bootstrap (toy-boot-n12 from its top level): the decrypted logits match simulate()
    within 2^-40 of their size (measured 2^-46.2; the top levels' scales are 2^52)."""
    p, got, want = _encrypted(toy_boot_context, False)
    assert p.bootstraps == 0
    err = np.abs(got - want).max() / np.abs(want).max()
    assert np.log2(err) < -40, err
    print(f"encrypted vs simulate: 2^{np.log2(err):.1f}")


def test_encrypted_small_cnn_toy_compact(toy_boot_context):
    """The same with the diagonals held compact (int32 coefficients, expanded in the program):
    the weights are rounded to 2^s multiples (s up to ~22 at the 2^52 scales), so the logits
    match simulate() within 2^-30 of their size (measured 2^-32.2; encoded: 2^-46.2)."""
    p, got, want = _encrypted(toy_boot_context, False, compact=True)
    assert p.compact_bytes < p.diagonal_bytes   # both hold every r-th word (N / 2n slots)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert np.log2(err) < -30, err
    print(f"compact vs simulate: 2^{np.log2(err):.1f}")


def test_encrypted_small_cnn_toy_mixed(toy_boot_context):
    """compact=None with a budget for the first layer only: that layer encoded, the others
    compact (one program over both forms), within the compact bound of simulate()."""
    g = np.random.default_rng(3)   # _encrypted's model and plan
    params, x = nn.init_params(TINY, 1, 3, g), g.normal(size=(6, 4, 4, 1))
    probe = compiler.plan(TINY, params, toy_boot_context.params, activation.PolyReLU.direct(3),
                          compiler.calibrate(TINY, params, x), input_shape=(4, 4, 1),
                          start_level=toy_boot_context.params.max_level)
    first = next(op for op in probe.ops if op.kind == "linear")
    p, got, want = _encrypted(toy_boot_context, False, compact=None, encoded_bytes=first.encoded_bytes)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert np.log2(err) < -30, err


def test_compile_model_budget_and_forms(toy_boot_context):
    """The default picks layers in plan order while their encoded bytes fit; the form names it;
    encoded_bytes with an explicit form is refused."""
    g = np.random.default_rng(5)
    params, x = nn.init_params(TINY, 1, 3, g), g.normal(size=(6, 4, 4, 1))
    p = compiler.plan(TINY, params, toy_boot_context.params, activation.PolyReLU.direct(3),
                      compiler.calibrate(TINY, params, x), input_shape=(4, 4, 1),
                      start_level=toy_boot_context.params.max_level)
    linear = [i for i, op in enumerate(p.ops) if op.kind == "linear"]
    sizes = [p.ops[i].encoded_bytes for i in linear]
    assert all(s > 0 for s in sizes) and sum(sizes) == p.diagonal_bytes
    assert sum(p.ops[i].compact_bytes for i in linear) == p.compact_bytes
    every = compiler.compile_model(p, toy_boot_context, compact=None, encoded_bytes=sum(sizes), progress=False)
    assert every.compact == () and every.form == "encoded"
    none = compiler.compile_model(p, toy_boot_context, compact=None, encoded_bytes=0, progress=False)
    assert none.compact == tuple(linear) and none.form == "compact"
    some = compiler.compile_model(p, toy_boot_context, compact=None, encoded_bytes=sizes[0], progress=False)
    assert some.compact == tuple(linear[1:])
    assert some.form == f"mixed ({len(linear) - 1} of {len(linear)} layers compact)"
    with pytest.raises(ValueError, match="encoded_bytes"):
        compiler.compile_model(p, toy_boot_context, compact=True, encoded_bytes=0)


@pytest.mark.slow
def test_encrypted_small_cnn_toy_bootstrapped(toy_boot_context):
    """The same from level 4 (toy-boot-n12's bootstrap output): one bootstrap before the second
    activation; within 2^-20 of simulate() (measured 2^-25.8)."""
    p, got, want = _encrypted(toy_boot_context, True)
    assert p.bootstraps == 1
    err = np.abs(got - want).max() / np.abs(want).max()
    assert np.log2(err) < -20, err
    print(f"bootstrapped: 2^{np.log2(err):.1f}")


def _abstract_keys(p, steps):
    """EvalKeys / BootstrapKeys of ShapeDtypeStructs (tracing only: nothing generated)."""
    import jax
    from jax_fhe import rlwe
    dnum = -(-p.num_q // p.alpha)
    key = lambda: rlwe.KeySwitchKey(data=jax.ShapeDtypeStruct((dnum, 2, len(p.all_primes), p.n), np.uint32),  # noqa: E731
                                    alpha=p.alpha, num_q=p.num_q)
    evk = ckks.EvalKeys(relin=key(), rotations={s: key() for s in sorted(steps)}, conjugation=key(), params=p)
    return evk, circuits.BootstrapKeys(evk=evk, to_sparse=key(), to_dense=key())


def _abstract(tree):
    import jax
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), tree)


@pytest.mark.parametrize("kind", ["composite", "direct31"])
def test_relu_lands_on_the_default_scale(kind):
    """The polynomial ReLU's output (composite: x times the last sign stage, rescaled; direct: one
    polynomial) carries its level's default scale at n16-boot (a bootstrap after it requires
    it; traced only)."""
    import jax
    cp = ckks.preset("n16-boot")
    ctx = ckks.make_context(cp)
    act = (activation.PolyReLU(sign=activation.composite_sign((7, 15, 15), 2.0 ** -7)) if kind == "composite"
           else activation.PolyReLU.direct(31))
    evk, _ = _abstract_keys(cp, ())
    ct = ckks.Ciphertext(data=jax.ShapeDtypeStruct((2, len(cp.rows(12)), cp.n), np.uint32), level=12,
                         scale=cp.default_scale(12), slots=cp.slots, params=cp)
    out = jax.eval_shape(lambda c, k, x: act.encrypted(c, x, k), ct, evk, _abstract(ctx))
    assert out.level == 12 - act.depth
    assert ckks.scales_match(out.scale, cp.default_scale(out.level), cp), (out.scale, cp.default_scale(out.level))


def test_bootstrapped_value_read_twice(toy_boot_context):
    """A residual block whose input is bootstrapped before conv1 also reads the bootstrapped
    value in its shortcut (the plan's levels; a level-0 read would raise): the whole program
    traces to the plan's output level on toy-boot-n12 (jax.eval_shape: nothing computed)."""
    import jax
    ctx = toy_boot_context
    params, x = _small(cin=2)
    bounds = compiler.calibrate(SMALL, params, x)
    act = activation.PolyReLU(sign=activation.composite_sign((3,), 2.0 ** -3))
    probe = compiler.plan(SMALL, params, ctx.params, act, bounds, input_shape=(8, 8, 2), boot_level=ctx.params.max_level)
    boot = circuits.make_bootstrapper(ctx, circuits.BootstrapConfig(slots=probe.slots))
    p = compiler.plan(SMALL, params, ctx.params, act, bounds, input_shape=(8, 8, 2), boot_level=boot.output_level)
    assert p.bootstraps >= 2
    readers = [op for op in p.ops if op.kind == "linear" and not op.boot and op.level == p.boot_level
               and any(o.boot and o.src == op.src for o in p.ops)]
    assert readers, "the spec should have a shortcut reading a bootstrapped value"
    model = compiler.compile_model(p, ctx, boot)
    evk, bk = _abstract_keys(ctx.params, set(p.rotations) | set(boot.rotation_steps()))
    cp = ctx.params
    ct = ckks.Ciphertext(data=jax.ShapeDtypeStruct((2, len(cp.rows(p.start_level)), cp.n), np.uint32),
                         level=p.start_level, scale=cp.default_scale(p.start_level), slots=p.slots, params=cp)
    out = jax.eval_shape(model.fn, ct, evk, bk, model.transforms, model.biases, ctx, boot)
    assert out.level == p.out_level
