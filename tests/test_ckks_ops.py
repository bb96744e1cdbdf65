"""CKKS end to end on the insecure test sets: every operation against numpy float64, with the
measured precision asserted (bits = -log2 of the mean / max absolute slot error).

Bounds are the measured values (in the comments, CPU) minus 1 bit for the mean and 2 bits for the
max, since inputs differ per test id (cpu/gpu). Theory for toy-N12 (N = 2^12, scale 2^40,
uniform ternary secret): secret-key encryption noise e (sigma 3.2) gives a slot error of about
3.2 sqrt(N/2) / 2^40 = 2^-32.4; public-key encryption (in QP, then ModDown: rounding
eps0 + eps1 s, |eps| <= 1/2) about 2^-30.5; a rescale adds rounding (r0 + r1 s, |r| <= 1/2) of
about 2^-31.5."""
import jax
import numpy as np
import pytest

from jax_fhe import ckks
from jax_fhe.rns import HostRandom
from ckks_helpers import check_precision as _check

STEPS = (1, 2, 3, 7, 100, 1023, -1, -5)


@pytest.fixture(scope="module")
def toy():
    ctx = ckks.make_context(ckks.toy_n12())
    keys = ckks.keygen(ctx, HostRandom.insecure_deterministic(12), rotations=STEPS, conjugation=True)
    return ctx, keys


@pytest.fixture(scope="module")
def single():
    ctx = ckks.make_context(ckks.toy_n11_single())
    keys = ckks.keygen(ctx, HostRandom.insecure_deterministic(11), rotations=(1, -3), conjugation=True)
    return ctx, keys


@pytest.fixture
def env(toy, put):
    ctx, keys = put(toy)
    return ctx, keys


def _unit(rng, shape):
    """Complex values on the unit circle: products stay of modulus 1."""
    return np.exp(2j * np.pi * rng.uniform(size=shape))


def _cplx(rng, shape):
    return rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)


def _enc(z, ctx, keys, seed, *, secret=False, **kw):
    key = keys.secret if secret else keys.public
    return ckks.encrypt(ckks.encode(z, ctx, **kw), ctx, key, HostRandom.insecure_deterministic(seed))


def _dec(ct, ctx, keys):
    return ckks.decode(ckks.decrypt(ct, ctx, keys.secret), ctx)


# -- encoding and encryption ---------------------------------------------------------------------

@pytest.mark.parametrize("slots", [2048, 64, 1])
def test_encode_decode(slots, env, rng):
    ctx, _ = env
    z = _cplx(rng, (2, slots))
    pt = ckks.encode(z, ctx)
    assert pt.data.shape == (2, 10, 4096) and pt.slots == slots
    _check(z, ckks.decode(pt, ctx), 35.0, 32.4)  # measured 36.0 / 34.4 (2048 slots)
    x = rng.uniform(-1, 1, slots)
    got = ckks.decode(ckks.encode(x, ctx, level=0), ctx, real=True)
    assert got.dtype == np.float64
    _check(x, got, 35.0, 32.4)


@pytest.mark.parametrize("n", [4, 16, 256])
def test_embedding_is_the_canonical_one(n, rng):
    """encoder.embed(c) is p(zeta^(5^j)) for slot j (zeta = exp(i pi / N)), evaluated directly, and
    embed_inverse is its inverse with real coefficients."""
    from jax_fhe.ckks import encoder
    c = rng.normal(size=(3, n))
    zeta = np.exp(1j * np.pi / n)
    powers = np.array([pow(5, j, 2 * n) for j in range(n // 2)])
    direct = np.array([[np.sum(cc * zeta ** (e * np.arange(n))) for e in powers] for cc in c])
    assert np.abs(encoder.embed(c, n) - direct).max() < 1e-12 * n
    back = encoder.embed_inverse(direct, n)
    assert back.dtype == np.float64 and np.abs(back - c).max() < 1e-12 * n


def test_encode_large_values_exactly(env):
    ctx, _ = env
    # scale 2^80 pushes coefficients past 2^62: residues come from the float's mantissa/exponent
    z = np.array([3.0 + 1j, -2.5, 0.125, 1e3])
    pt = ckks.encode(z, ctx, level=4, scale=2.0**80)
    # measured 43.5 / 43.0: the float64 FFT's rounding on |z| up to 2^10 (2^-52 relative)
    _check(z, ckks.decode(pt, ctx), 42.5, 42.0)


def test_fresh_encryption(env, rng):
    ctx, keys = env
    z = _cplx(rng, 2048)
    _check(z, _dec(_enc(z, ctx, keys, 1, secret=True), ctx, keys), 31.5, 28.7)  # 32.5 / 30.7
    _check(z, _dec(_enc(z, ctx, keys, 2), ctx, keys), 29.4, 25.9)  # measured 30.4 / 27.9


# -- addition ------------------------------------------------------------------------------------

def test_add_sub_neg(env, rng):
    ctx, keys = env
    z, w = _cplx(rng, 2048), _cplx(rng, 2048)
    a, b = _enc(z, ctx, keys, 3), _enc(w, ctx, keys, 4)
    _check(z + w, _dec(ckks.add(a, b, ctx), ctx, keys), 28.9, 25.4)  # measured 29.9 / 27.4-27.6
    _check(z - w, _dec(ckks.sub(a, b, ctx), ctx, keys), 28.9, 25.4)
    _check(-z, _dec(ckks.neg(a, ctx), ctx, keys), 29.4, 25.9)
    pw = ckks.encode(w, ctx)
    _check(z + w, _dec(ckks.add(a, pw, ctx), ctx, keys), 29.4, 25.9)  # measured 30.4 / 27.9
    _check(z - w, _dec(ckks.sub(a, pw, ctx), ctx, keys), 29.4, 25.9)
    _check(w + z, _dec(ckks.add(pw, a, ctx), ctx, keys), 29.4, 25.9)
    _check(z + 0.75, _dec(ckks.add(a, 0.75, ctx), ctx, keys), 29.4, 25.9)
    _check(z + (0.5 - 2j), _dec(ckks.add(a, 0.5 - 2j, ctx), ctx, keys), 29.4, 25.9)
    _check(z - 3, _dec(ckks.sub(a, 3, ctx), ctx, keys), 29.4, 25.9)


# -- multiplication ------------------------------------------------------------------------------

def test_mul_ct_ct(env, rng):
    ctx, keys = env
    z, w = _cplx(rng, 2048), _cplx(rng, 2048)
    a, b = _enc(z, ctx, keys, 5), _enc(w, ctx, keys, 6)
    c = ckks.mul(a, b, ctx, keys.evaluation)
    p = ctx.params
    assert c.level == p.max_level - 1 and c.scale == pytest.approx(p.default_scale(c.level), rel=1e-12)
    _check(z * w, _dec(c, ctx, keys), 28.8, 25.1)  # measured 29.8 / 27.1
    # relinearize without rescaling, then rescale: the same bits
    c2 = ckks.mul(a, b, ctx, keys.evaluation, rescale=False)
    assert c2.level == p.max_level and c2.scale == pytest.approx(a.scale * b.scale)
    _check(z * w, _dec(c2, ctx, keys), 28.8, 25.1)  # measured 30.2 / 27.4
    np.testing.assert_array_equal(np.asarray(ckks.rescale(c2, ctx).data), np.asarray(c.data))


def test_mul_plaintext_and_constants(env, rng):
    ctx, keys = env
    z, w = _cplx(rng, 2048), _cplx(rng, 2048)
    a = _enc(z, ctx, keys, 7)
    _check(z * w, _dec(ckks.mul(a, ckks.encode(w, ctx), ctx), ctx, keys), 29.1, 25.4)  # 30.1 / 27.4
    for c in (0.3, -1.7, 0.25 + 0.5j):
        out = ckks.mul(a, c, ctx)
        assert out.scale == pytest.approx(ctx.params.default_scale(out.level), rel=1e-12)
        _check(z * c, _dec(out, ctx, keys), 28.4, 25.0)  # measured >= 29.4 / 27.0
    out = ckks.mul(a, 3, ctx, rescale=False)  # integers: exact, no level
    assert out.level == a.level and out.scale == a.scale
    _check(3 * z, _dec(out, ctx, keys), 27.8, 24.4)  # measured 28.8 / 26.4
    _check(1j * z, _dec(ckks.mul_i(a, ctx), ctx, keys), 29.4, 26.0)  # measured 30.4 / 28.0


def test_mul_constant_at_a_chosen_scale(env, rng):
    ctx, keys = env
    z = _cplx(rng, 2048)
    a = _enc(z, ctx, keys, 17)
    out = ckks.mul(a, -0.7, ctx, const_scale=2.0**33, rescale=False)
    assert out.level == a.level and out.scale == a.scale * 2.0**33
    _check(-0.7 * z, _dec(out, ctx, keys), 29.9, 26.5)  # measured 30.9 / 28.5
    out = ckks.mul(a, 0.3 + 0.1j, ctx, const_scale=2.0**45)  # rescaled: scale a.scale 2^45 / rho
    assert out.scale == pytest.approx(a.scale * 2.0**45 / float(ctx.params.ratio(a.level)), rel=1e-15)
    _check((0.3 + 0.1j) * z, _dec(out, ctx, keys), 31.1, 27.7)  # measured 32.1 / 29.7
    with pytest.raises(TypeError, match="number operand only"):
        ckks.mul(a, a, ctx, keys.evaluation, const_scale=2.0**40)
    with pytest.raises(ValueError, match="const_scale must be positive"):
        ckks.mul(a, 0.5, ctx, const_scale=0.0)


def test_depth_chain_to_level_0(env, rng):
    """x <- x * y until level 0, y fresh at the top level (re-aligned every time)."""
    ctx, keys = env
    p = ctx.params
    z, w = _unit(rng, 2048), _unit(rng, 2048)
    x, y = _enc(z, ctx, keys, 8, secret=True), _enc(w, ctx, keys, 9, secret=True)
    ref = z
    measured = []
    for _ in range(p.max_level):
        x = ckks.mul(x, y, ctx, keys.evaluation)
        ref = ref * w
        measured.append(ckks.precision(ref, _dec(x, ctx, keys)).mean_bits)
        assert x.scale == pytest.approx(p.default_scale(x.level), rel=2.0**-36)
    assert x.level == 0
    # measured 30.5 29.8 29.4 29.0 28.7 28.6 (levels 5..0): ~2^-31.5 per rescale/level-down
    assert min(measured) >= 27.6 and measured[0] >= 29.5


def test_plain_chain_one_prime_per_level(single, put, rng):
    ctx, keys = put(single)
    p = ctx.params
    z, w = _unit(rng, 1024), _unit(rng, 1024)
    x, y = _enc(z, ctx, keys, 10), _enc(w, ctx, keys, 11)
    _check(z, _dec(x, ctx, keys), 22.6, 19.3)  # measured 23.6 / 21.3 (scale 2^30, h = 64)
    ref = z
    for _ in range(p.max_level):
        x, ref = ckks.mul(x, y, ctx, keys.evaluation), ref * w
        assert len(p.dropped(x.level + 1)) == 1
    assert x.level == 0
    _check(ref, _dec(x, ctx, keys), 20.3, 16.6)  # measured 21.3 / 18.6
    _check(np.roll(z, 3), _dec(ckks.rotate(_enc(z, ctx, keys, 12), -3, ctx, keys.evaluation), ctx, keys),
           19.8, 16.7)  # measured 20.8 / 18.7


# -- levels and alignment ------------------------------------------------------------------------

def test_level_down_and_alignment(env, rng):
    ctx, keys = env
    p = ctx.params
    z, w = _cplx(rng, 2048), _cplx(rng, 2048)
    a = _enc(z, ctx, keys, 13, secret=True)
    for level in range(p.max_level):
        d = ckks.level_down(a, ctx, level)
        assert d.level == level and ckks.scales_match(d.scale, a.scale, p)
        _check(z, _dec(d, ctx, keys), 28.3, 24.7)  # measured >= 29.3 / 26.7 (level 1)
        d = ckks.level_down(a, ctx, level, scale=p.default_scale(level))
        assert ckks.scales_match(d.scale, p.default_scale(level), p)
        _check(z, _dec(d, ctx, keys), 28.3, 24.7)
    # level 6 -> 4 drops limbs only (a subset, same scale); 6 -> 5 needs a rescale (not a subset)
    assert p.is_subset(4, 6) and not p.is_subset(5, 6)
    assert ckks.level_down(a, ctx, 4).scale == a.scale
    assert ckks.level_down(a, ctx, 5).scale != a.scale
    # add / mul of operands at different levels and scales
    b = _enc(w, ctx, keys, 14, secret=True, level=2)
    _check(z + w, _dec(ckks.add(a, b, ctx), ctx, keys), 29.3, 26.0)  # measured 30.3 / 28.0
    _check(z * w, _dec(ckks.mul(a, b, ctx, keys.evaluation), ctx, keys), 29.0, 25.3)  # 30.0 / 27.3
    # at one level, a scale 2^40 and a scale ~2^80 ciphertext: integer-multiplied to match
    sq = ckks.mul(a, a, ctx, keys.evaluation, rescale=False)
    _check(z * z + z, _dec(ckks.add(sq, a, ctx), ctx, keys), 30.7, 27.4)  # 31.7 / 29.4


def test_level_down_lands_precisely_across_ratio_changes():
    """level_down from the 50/58-bit bootstrapping levels of toy-boot-n12 (default scale 2^52.2
    at the top) into the 40-bit levels lands within scales_match's tolerance, and a ciphertext
    at a non-default scale (2^80 above the default) keeps it across levels that are not nested.
    Before the fix, 18 -> 3 dropped limbs to level 4 keeping 2^52.2 and rescaled once with
    c = 2^27.8 (a landing error of 2^-28.8 > 2^-36, so adding the result to a level-3
    ciphertext failed), and the non-default scale raised "cannot reach scale"."""
    from jax_fhe.ckks import evaluator
    p = ckks.toy_boot_n12()
    ctx = ckks.make_context(p)
    sk = ckks.gen_secret_key(ctx, HostRandom.insecure_deterministic(3))
    rng = np.random.default_rng(3)
    z = _cplx(rng, 64)
    a = ckks.encrypt(ckks.encode(z, ctx, level=18), ctx, sk, HostRandom.insecure_deterministic(4))
    old_c = p.default_scale(3) * float(p.ratio(4)) / a.scale  # the old single rescale from level 4
    assert p.is_subset(4, 18) and np.log2(old_c) < 28
    for level in (0, 3, 5, 7, 9):
        d = ckks.level_down(a, ctx, level, scale=p.default_scale(level))
        assert d.level == level and abs(d.scale / p.default_scale(level) - 1) <= 2.0 ** -(p.log_scale - 2)
        b = ckks.encrypt(ckks.encode(z, ctx, level=level), ctx, sk, HostRandom.insecure_deterministic(5))
        got = ckks.decode(ckks.decrypt(ckks.add(d, b, ctx), ctx, sk), ctx)
        assert np.abs(got - 2 * z).max() < 2.0 ** -24
    big = p.default_scale(9) * 2.0 ** 80  # e.g. an inverse 1/y with y < 2^80 at 2^40 precision
    c = ckks.encrypt(ckks.encode(z * 1e-20, ctx, level=9, scale=big), ctx, sk, HostRandom.insecure_deterministic(6))
    for level in (2, 5):
        d = ckks.level_down(c, ctx, level)
        assert ckks.scales_match(d.scale, big, p)
        got = ckks.decode(ckks.decrypt(d, ctx, sk), ctx)
        assert np.abs(got - z * 1e-20).max() < 2.0 ** -30 * 1e-20
    c_path = evaluator._path_factors(p, a.scale, 10, evaluator._scale_path(p, a.scale, 10, 5, p.default_scale(5)))
    assert min(c_path) > 2.0 ** 37


# -- rotations -----------------------------------------------------------------------------------

def test_every_rotation_step_and_conjugation(env, rng):
    ctx, keys = env
    z = _cplx(rng, 2048)
    a = _enc(z, ctx, keys, 15, secret=True)
    for step in STEPS:
        _check(np.roll(z, -step), _dec(ckks.rotate(a, step, ctx, keys.evaluation), ctx, keys),
               29.2, 25.4)  # measured >= 30.2 / 27.4 (key-switch rounding u0 + u1 s)
    _check(np.conj(z), _dec(ckks.conjugate(a, ctx, keys.evaluation), ctx, keys), 29.2, 25.4)
    low = ckks.level_down(a, ctx, 2)  # rotations at a lower level (fewer digits)
    _check(np.roll(z, -7), _dec(ckks.rotate(low, 7, ctx, keys.evaluation), ctx, keys), 28.3, 25.0)


def test_hoisted_rotations_equal_single_rotations(env, rng):
    ctx, keys = env
    z = _cplx(rng, (2, 2048))
    a = _enc(z, ctx, keys, 16)
    steps = [1, 0, 7, -5, 100]
    outs = ckks.rotate_hoisted(a, steps, ctx, keys.evaluation)
    for s, o in zip(steps, outs):
        np.testing.assert_array_equal(np.asarray(o.data), np.asarray(ckks.rotate(a, s, ctx, keys.evaluation).data))
        _check(np.roll(z, -s, axis=-1), _dec(o, ctx, keys), 28.8, 25.4)  # measured >= 29.8 / 27.4


def test_sparse_slots_rotate(env, rng):
    ctx, keys = env
    z = _cplx(rng, 16)
    a = _enc(z, ctx, keys, 17)
    out = _dec(ckks.rotate(ckks.mul(a, a, ctx, keys.evaluation), 3, ctx, keys.evaluation), ctx, keys)
    assert out.shape == (16,)
    _check(np.roll(z * z, -3), out, 29.0, 26.5)  # measured 30.0 / 28.5


# -- jit, vmap -----------------------------------------------------------------------------------

def _circuit(a, b, ctx, evk):
    c = ckks.add(ckks.mul(a, b, ctx, evk), a, ctx)
    r = ckks.rotate_hoisted(c, [1, 2], ctx, evk)
    return ckks.sub(ckks.mul(r[0], 0.5, ctx), ckks.conjugate(r[1], ctx, evk), ctx)


def test_jit_equals_eager_and_vmap_equals_loop(env, rng):
    ctx, keys = env
    z, w = _cplx(rng, (3, 64)), _cplx(rng, (3, 64))
    a, b = _enc(z, ctx, keys, 18), _enc(w, ctx, keys, 19)
    evk = keys.evaluation
    jitted = jax.jit(_circuit)(a, b, ctx, evk)
    eager = _circuit(a, b, ctx, evk)
    np.testing.assert_array_equal(np.asarray(jitted.data), np.asarray(eager.data))
    vm = jax.vmap(_circuit, in_axes=(0, 0, None, None))(a, b, ctx, evk)
    one = lambda x, i: ckks.Ciphertext(data=x.data[i], level=x.level, scale=x.scale,  # noqa: E731
                                       slots=x.slots, params=x.params)
    for i in range(3):
        np.testing.assert_array_equal(np.asarray(vm.data[i]),
                                      np.asarray(jax.jit(_circuit)(one(a, i), one(b, i), ctx, evk).data))
    y = z * w + z
    want = 0.5 * np.roll(y, -1, axis=-1) - np.conj(np.roll(y, -2, axis=-1))
    _check(want, _dec(jitted, ctx, keys), 27.8, 24.9)  # measured 28.8 / 26.9


# -- bad inputs ----------------------------------------------------------------------------------

def test_bad_inputs_raise(env, single, rng):
    ctx, keys = env
    ctx2, keys2 = single
    evk = keys.evaluation
    z = _cplx(rng, 64)
    a = _enc(z, ctx, keys, 20)
    other = _enc(z[:32], ctx2, keys2, 21)
    with pytest.raises(ValueError, match="toy-N11-single.*context for 'toy-N12'"):
        ckks.add(a, other, ctx)
    with pytest.raises(ValueError, match="keys are for"):
        ckks.mul(a, a, ctx, keys2.evaluation)
    with pytest.raises(ValueError, match="same parameter set"):
        ckks.encrypt(ckks.encode(z, ctx), ctx, keys2.public)
    with pytest.raises(ValueError, match=r"mod_down_rescale: level must be in \[1, "):
        ckks.mod_down_rescale(a.data, ctx, 0)
    with pytest.raises(ValueError, match=r"mod_down_rescale: level must be in \[1, "):
        ckks.mod_down_rescale(a.data, ctx, ctx.params.max_level + 1)
    with pytest.raises(ValueError, match="no rotation key for step 4"):
        ckks.rotate(a, 4, ctx, evk)
    with pytest.raises(ValueError, match="no rotation key for step 4"):
        ckks.rotate_hoisted(a, [1, 4], ctx, evk)
    with pytest.raises(ValueError, match="no conjugation key"):
        ckks.conjugate(other, ctx2, ckks.keygen(ctx2, HostRandom.insecure_deterministic(1)).evaluation)
    with pytest.raises(ValueError, match="relinearization key"):
        ckks.mul(a, a, ctx)
    with pytest.raises(ValueError, match="different slot counts"):
        ckks.add(a, _enc(z[:32], ctx, keys, 22), ctx)
    bad = ckks.Ciphertext(data=a.data[..., :5, :], level=a.level, scale=a.scale, slots=a.slots, params=a.params)
    with pytest.raises(ValueError, match=r"expected \[\.\.\., 2, 10, 4096\] for level 6"):
        ckks.add(bad, a, ctx)
    with pytest.raises(TypeError, match="uint32"):
        ckks.neg(ckks.Ciphertext(data=np.zeros((2, 10, 4096), np.int32), level=6, scale=a.scale,
                                 slots=64, params=a.params), ctx)
    with pytest.raises(TypeError, match="CKKSContext"):
        ckks.add(a, a, keys)
    with pytest.raises(TypeError, match="cannot add"):
        ckks.add(a, "x", ctx)
    with pytest.raises(ValueError, match="level 0"):
        ckks.rescale(ckks.level_down(a, ctx, 0), ctx)
    with pytest.raises(ValueError, match="above the ciphertext's level"):
        ckks.level_down(ckks.level_down(a, ctx, 1), ctx, 3)
    # a plaintext at a level whose primes do not contain the ciphertext's (levels 1 and 2)
    with pytest.raises(ValueError, match="not a superset"):
        ckks.add(ckks.level_down(a, ctx, 1), ckks.encode(z, ctx, level=2, scale=a.scale), ctx)
    with pytest.raises(ValueError, match="plaintext scale"):
        ckks.add(a, ckks.encode(z, ctx, scale=2.0**30), ctx)
    with pytest.raises(ValueError, match="incompatible scales"):
        ckks.add(a, _enc(z, ctx, keys, 23, scale=2.0**41), ctx)  # one level, scales 2^40 and 2^41
    with pytest.raises(ValueError, match="slot count"):
        ckks.encode(np.zeros(3), ctx)
    with pytest.raises(TypeError, match="HostRandom"):
        ckks.keygen(ctx, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rotation step must be an int"):
        ckks.rotate(a, 1.0, ctx, evk)


def test_context_for_levels(env, rng):
    """A context restricted to one level holds only that level's tables, gives the same bits,
    and says so when an operation needs a level it left out."""
    ctx, keys = env
    z = _cplx(rng, 64)
    a = _enc(z, ctx, keys, 20)
    lctx = ctx.for_levels([a.level])
    assert lctx.levels() == (a.level,) and "levels=" in repr(lctx)
    assert [l for l, t in enumerate(lctx.keyswitch) if t is not None] == [a.level]
    f = jax.jit(lambda x, c, e: ckks.mul(x, x, c, e))
    np.testing.assert_array_equal(np.asarray(f(a, lctx, keys.evaluation).data),
                                  np.asarray(f(a, ctx, keys.evaluation).data))
    np.testing.assert_array_equal(np.asarray(ckks.rotate(a, 1, lctx, keys.evaluation).data),
                                  np.asarray(ckks.rotate(a, 1, ctx, keys.evaluation).data))
    low = ckks.rescale(a, ctx)
    with pytest.raises(ValueError, match="for_levels"):
        ckks.rescale(low, lctx)
