"""KLSS key switching (jax_fhe.rlwe.klss): bit for bit hybrid's with the same first-level key
(the strongest check, notes/klss.md §8.1), the T bound (asserted, and one prime too few gives
wrong bits on a worst-case input, §8.2), CKKS end to end with a KLSS preset, the per-level
selector and "auto"."""
import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import ckks, ops, rlwe, rns
from jax_fhe.rlwe import keyswitch, klss, selector
from jax_fhe.rns import HostRandom
from ckks_helpers import check_precision

N = 1 << 10


@pytest.fixture(scope="module")
def chain():
    """5 q primes (30-bit), 2 special primes (31-bit), digits of 2 rows: dnum = 3."""
    qs = rns.ntt_primes(30, 5, N)
    ps = rns.ntt_primes(31, 2, N)
    return qs + ps, 5, 2


def _keys(ring, primes, num_q, alpha, seed, count=1):
    r = HostRandom.insecure_deterministic(seed)
    s = ops.ntt(jnp.asarray(rns.to_residues(r.ternary((count + 1, ring.n)), primes)), ring)
    return [rlwe.gen_switching_key(ring, s[i + 1], s[0], num_q=num_q, alpha=alpha, sigma=3.2, rng=r)
            for i in range(count)], r


def _assert_same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# -- bit-identity with hybrid ----------------------------------------------------------------------

# bases: every row, a gap (a partial digit), out of order, one digit missing (digits 1 and 2 only),
# two full digits back to back, all with the digits' conversions stacked in one launch (padded
# where the digits differ in size), and digit 0 split (each digit converted alone); blocks: 1, 2,
# 3 rows and the default
@pytest.mark.parametrize("block", [1, 2, 3, None])
def test_bit_identical_to_hybrid(chain, block, device, put):
    primes, num_q, alpha = chain
    ring = put(rns.make_context(primes, N))
    layout = klss.klss_layout(primes, num_q, alpha, N, block=block)
    (hkey,), r = _keys(ring, primes, num_q, alpha, 6)
    kkey = put(klss.key_from_hybrid(hkey, ring, layout))
    assert kkey.data.shape == (3, 2, len(layout.blocks), layout.t_count, N)
    for qrows in [(0, 1, 2, 3, 4), (0, 1, 3, 4), (4, 0, 2), (2, 3, 4), (0, 1, 2, 3), (0, 2, 1, 3)]:
        ht = put(rlwe.make_hybrid_tables(primes, qrows, (5, 6), alpha))
        kt = put(klss.make_klss_tables(qrows, (5, 6), layout))
        assert (kt.digit_stacked is not None) == (qrows != (0, 2, 1, 3))
        x = put(jnp.asarray(np.moveaxis(r.uniform_mod([primes[i] for i in qrows], (2, N)), 0, 1)))
        # before ModDown: the extended product (both parts, every row of Q_l P)
        want = rlwe.key_product_extended(x, rlwe.mod_up_convs(x, ring, ht), hkey, ring, ht)
        got = keyswitch.product_extended(x, keyswitch.decompose(x, ring, kt), kkey, ring, kt)
        _assert_same(got, want)
        # after: the fused switch, and ModDown of the extended product
        want = rlwe.key_switch(x, hkey, ring, ht)
        _assert_same(keyswitch.key_switch(x, kkey, ring, kt), want)
        _assert_same(keyswitch.mod_down(got, ring, kt), want)
        _assert_same(keyswitch.lift_extended(x[0], ring, kt), keyswitch.lift_extended(x[0], ring, ht))


def test_many_digits_and_slices(device, put):
    """More digits than one key-product launch takes (16 one-row digits: two launches each way),
    and a decomposition too tall for one launch to index (16 digits x 16 T primes: each launch
    reads its own slice); hybrid itself then sums launches too."""
    qs = rns.ntt_primes(30, 16, N)
    ps = rns.ntt_primes(31, 1, N)
    primes = qs + ps
    ring = put(rns.make_context(primes, N))
    (hkey,), r = _keys(ring, primes, 16, 1, 8)
    for t_count, qrows in ((None, tuple(range(1, 12))), (16, tuple(range(16)))):
        layout = klss.klss_layout(primes, 16, 1, N, block=3, t_count=t_count)
        assert (len(tables_digits(layout)) * layout.t_count > 254) == (t_count == 16)
        kkey = klss.key_from_hybrid(hkey, ring, layout)
        ht = put(rlwe.make_hybrid_tables(primes, qrows, (16,), 1))
        kt = put(klss.make_klss_tables(qrows, (16,), layout))
        x = put(jnp.asarray(r.uniform_mod([primes[i] for i in qrows], N)))
        want = rlwe.key_product_extended(x, rlwe.mod_up_convs(x, ring, ht), hkey, ring, ht)
        _assert_same(klss.product_extended(x, klss.decompose(x, ring, kt), kkey, ring, kt), want)
        if t_count is None:
            _assert_same(klss.key_switch(x, kkey, ring, kt), rlwe.key_switch(x, hkey, ring, ht))
            _assert_same(rlwe.key_switch(x, hkey, ring, ht), rlwe.mod_down(want, ring, ht))


def tables_digits(layout):
    return [d for d, _ in rlwe.digit_rows(range(layout.num_q), layout.alpha)]


def test_jit_vmap_and_key_batches(chain, device, put):
    primes, num_q, alpha = chain
    ring = put(rns.make_context(primes, N))
    layout = klss.klss_layout(primes, num_q, alpha, N, block=2)
    (k1, k2), r = _keys(ring, primes, num_q, alpha, 9, count=2)
    kk = [put(klss.key_from_hybrid(k, ring, layout)) for k in (k1, k2)]
    qrows = (0, 1, 2, 3)
    kt = put(klss.make_klss_tables(qrows, (5, 6), layout))
    x = put(jnp.asarray(np.moveaxis(r.uniform_mod([primes[i] for i in qrows], (3, N)), 0, 1)))
    eager = np.stack([np.asarray(klss.key_switch(x[i], kk[0], ring, kt)) for i in range(3)])
    _assert_same(jax.jit(keyswitch.key_switch)(x, kk[0], ring, kt), eager)
    _assert_same(jax.jit(jax.vmap(keyswitch.key_switch, in_axes=(0, None, None, None)))(x, kk[0], ring, kt), eager)
    keys = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), kk[0], kk[1])
    by_key = jax.vmap(keyswitch.key_switch, in_axes=(None, 0, None, None))(x[0], keys, ring, kt)
    _assert_same(by_key[0], eager[0])
    _assert_same(by_key[1], klss.key_switch(x[0], kk[1], ring, kt))
    # hoisting: one decomposition, two keys
    dec = jax.jit(keyswitch.decompose)(x, ring, kt)
    _assert_same(keyswitch.key_switch_decomposed(x, dec, kk[0], ring, kt), eager)


# -- the T bound ---------------------------------------------------------------------------------------

def _worst_case(primes, num_q, alpha, layout, ring):
    """A hybrid key and an input whose KLSS product reaches the bound's worst case: every digit of
    x at -(Q_l/2)(1 - 2^-12) in every coefficient; every key digit of block m at +b_m in
    coefficient 0 and -b_m elsewhere (b_m = (Q~_m/2)(1 - 2^-12)), so that coefficient 0 of
    U_m = sum_l x_l D~_m is -N sum_l |x_l| b_m: all N products of every digit add with one sign.
    (Just inside the edges: the fixed-point centering is exact there.) Returns (key, x, |U|)."""
    digits = [d for _, d in rlwe.digit_rows(range(num_q), alpha)]
    big = lambda rows: math.prod(primes[r] for r in rows)  # noqa: E731
    xs = {r: -(big(d) * (4095 // 2)) // 4096 for d in digits for r in d}  # value of each q row's digit
    x = np.array([[xs[r] % primes[r]] * ring.n for r in range(num_q)], dtype=np.uint64).astype(np.uint32)
    key = np.zeros((len(digits), 2, len(primes), ring.n), np.uint32)
    umax = 0
    for b in layout.blocks:
        bm = (big(b) * (4095 // 2)) // 4096
        for r in b:
            key[:, :, r, 0] = bm % primes[r]
            key[:, :, r, 1:] = (-bm) % primes[r]
        umax = max(umax, ring.n * sum(abs(xs[d[0]]) for d in digits) * bm)
    hkey = rlwe.KeySwitchKey(data=ops.ntt(jnp.asarray(key), ring), alpha=alpha, num_q=num_q)
    return hkey, ops.ntt(jnp.asarray(x), ring, range(num_q)), umax


def test_t_bound_is_asserted_and_one_prime_too_few_fails(chain, device, put):
    primes, num_q, alpha = chain
    ring = put(rns.make_context(primes, N))
    layout = klss.klss_layout(primes, num_q, alpha, N, block=2)
    t = layout.t_primes
    assert klss.t_suffices(t, klss.level_bound(layout, range(num_q), (5, 6)))
    assert 2 ** klss.required_t_bits(layout) < math.prod(t)
    # the assertion: one prime fewer is refused, by count and by explicit primes
    with pytest.raises(ValueError, match="too small"):
        klss.klss_layout(primes, num_q, alpha, N, block=2, t_count=len(t) - 1)
    with pytest.raises(ValueError, match="too small"):
        klss.make_layout(primes, num_q, alpha, N, 2, t[:-1])
    # the worst case reaches the bound: with T it equals hybrid, with one prime fewer it does not
    hkey, x, umax = _worst_case(primes, num_q, alpha, layout, ring)
    assert math.prod(t[:-1]) < 2 * umax < math.prod(t)  # T without its last prime cannot hold U
    ht = put(rlwe.make_hybrid_tables(primes, tuple(range(num_q)), (5, 6), alpha))
    want = np.asarray(rlwe.key_product_extended(x, rlwe.mod_up_convs(x, ring, ht), hkey, ring, ht))
    short = klss.make_layout(primes, num_q, alpha, N, 2, t[:-1], check=False)
    assert "UNCHECKED" in repr(short)
    for lay, equal in ((layout, True), (short, False)):
        kt = put(klss.make_klss_tables(tuple(range(num_q)), (5, 6), lay))
        kkey = klss.key_from_hybrid(hkey, ring, lay)
        got = np.asarray(klss.product_extended(x, klss.decompose(x, ring, kt), kkey, ring, kt))
        assert np.array_equal(got, want) == equal
        if not equal:
            # |U_k| = |N - 2k| |U_0| / N: wrong at k = 0, right wherever |U_k| < T'/2 (mid-range k)
            coeff = np.asarray(ops.intt(jnp.asarray(got), ring, kt.ext_rows))
            ref = np.asarray(ops.intt(jnp.asarray(want), ring, kt.ext_rows))
            fits = np.array([abs(N - 2 * k) * umax < N * math.prod(t[:-1]) // 2 for k in range(N)])
            assert (coeff[..., 0] != ref[..., 0]).any() and 0 < fits.sum() < N
            np.testing.assert_array_equal(coeff[..., fits], ref[..., fits])


def test_t_sizes_with_32_bit_words():
    """T is the fewest 31-bit primes that hold 2 max|U| (one fewer does not), about twice the
    number of the paper's 60-bit primes (notes/klss.md §2.4.3)."""
    for p in (ckks.toy_n12_klss(), ckks.cat_n15()):
        lay = selector.klss_layout_of(p)
        digits, blocks = [d for _, d in rlwe.digit_rows(range(lay.num_q), lay.alpha)], lay.blocks
        bound = klss.product_bound(lay.primes, lay.n, digits, blocks)
        assert klss.t_suffices(lay.t_primes, bound) and not klss.t_suffices(lay.t_primes[:-1], bound)
        need = klss.required_t_bits(lay)
        assert all(t.bit_length() == 31 for t in lay.t_primes)
        assert 2 * math.ceil(need / 60) - 1 <= lay.t_count <= 2 * math.ceil(need / 60) + 1


# -- CKKS --------------------------------------------------------------------------------------------

def _pair(pk):
    """KLSS parameter set ``pk`` and the same chain with hybrid key switching, contexts and keys
    from one seed: the same first-level keys (KLSS keys are converted hybrid keys)."""
    ph = dataclasses.replace(pk, keyswitch="hybrid", keyswitch_options=())
    out = {}
    for name, p in (("klss", pk), ("hybrid", ph)):
        ctx = ckks.make_context(p)
        out[name] = ctx, ckks.keygen(ctx, HostRandom.insecure_deterministic(21), rotations=(1, -3))
    return out


@pytest.fixture(scope="module")
def ckks_pair():
    """toy-N12-klss (one-row digits) against hybrid."""
    return _pair(ckks.toy_n12_klss())


@pytest.fixture(scope="module")
def ckks_pair_a2():
    """toy-N12's chain with digits of two rows, two special primes and blocks of 3: the level
    windows cut digits as well as blocks."""
    p = ckks.toy_n12()
    return _pair(dataclasses.replace(p, alpha=2, p_primes=p.p_primes[:2], keyswitch="klss",
                                     keyswitch_options={"klss_block": 3}, name="toy-N12-klss-a2"))


def _encrypt(z, ctx, keys, seed, level):
    return ckks.encrypt(ckks.encode(z, ctx, level=level), ctx, keys.public, HostRandom.insecure_deterministic(seed))


def _partial(tables) -> tuple:
    """(some digit is cut by the level, some block is cut by the level)."""
    lay = tables.layout
    full_digits = dict(rlwe.digit_rows(range(lay.num_q), lay.alpha))
    return (any(len(d) < len(full_digits[i]) for i, d in tables.digits),
            any(len(b) < len(lay.blocks[m]) for m, b in tables.blocks))


@pytest.mark.parametrize("config, level", [("a1", 6), ("a1", 4), ("a1", 1), ("a2", 5), ("a2", 2)])
def test_ckks_relin_and_rotation_identical_to_hybrid(request, config, level, device, put, rng):
    """Relinearization and rotations give hybrid's bits before ModDown (the extended product of
    the relinearization and rotation keys) and after (mul, rotate, hoisted rotate): one-row
    digits at the top (dnum 10: two launches), a middle and a low level; two-row digits at levels
    whose windows cut a digit. The KLSS results decrypt to numpy's within the hybrid bounds."""
    pair = request.getfixturevalue("ckks_pair" if config == "a1" else "ckks_pair_a2")
    kt = pair["klss"][0].keyswitch_tables(level)
    assert _partial(kt) == ((False, True) if config == "a1" else (True, True))
    z = rng.uniform(-1, 1, 2048) + 1j * rng.uniform(-1, 1, 2048)
    w = rng.uniform(-1, 1, 2048) + 1j * rng.uniform(-1, 1, 2048)
    res = {}
    for name in ("klss", "hybrid"):
        ctx, keys = put(pair[name])
        a, b = _encrypt(z, ctx, keys, 5, level), _encrypt(w, ctx, keys, 6, level)
        tables, c1 = ctx.keyswitch_tables(level), a.data[1]
        dec = keyswitch.decompose(c1, ctx.ring, tables)
        ext = [keyswitch.product_extended(c1, dec, k, ctx.ring, tables)
               for k in (keys.evaluation.relin, keys.evaluation.rotations[2045])]
        cts = [ckks.mul(a, b, ctx, keys.evaluation), ckks.rotate(a, -3, ctx, keys.evaluation),
               ckks.rotate_hoisted(a, [1, -3], ctx, keys.evaluation)[0]]
        res[name] = (ext, cts)
    for got, want in zip(res["klss"][0] + [c.data for c in res["klss"][1]],
                         res["hybrid"][0] + [c.data for c in res["hybrid"][1]]):
        _assert_same(got, want)
    ctx, keys = pair["klss"]
    dec = lambda ct: ckks.decode(ckks.decrypt(ct, ctx, keys.secret), ctx)  # noqa: E731
    prod, rot, hoisted = res["klss"][1]
    # measured (CPU, other inputs): a1 29.8-29.9 / 26.5-27.1 and 27.7-28.4 / 25.9-26.2; a2 29.8 / 27.2-27.4
    # and 29.3-29.9 / 27.4-27.7 (a2's P is two primes: smaller key-switching noise)
    check_precision(z * w, dec(prod), 28.8, 25.0)
    check_precision(np.roll(z, 3), dec(rot), 26.8, 24.0)
    check_precision(np.roll(z, -1), dec(hoisted), 26.8, 24.0)


def test_ckks_klss_end_to_end_jit(ckks_pair, device, put, rng):
    """Encrypt, multiply, rotate, decrypt on the KLSS preset under jax.jit, equal to eager."""
    ctx, keys = put(ckks_pair["klss"])
    z = rng.uniform(-1, 1, 2048) + 1j * rng.uniform(-1, 1, 2048)
    a = _encrypt(z, ctx, keys, 7, 6)

    def f(a, ctx, evk):
        return ckks.rotate(ckks.mul(a, a, ctx, evk), 1, ctx, evk)

    eager = f(a, ctx, keys.evaluation)
    _assert_same(jax.jit(f)(a, ctx, keys.evaluation).data, eager.data)
    got = ckks.decode(ckks.decrypt(eager, ctx, keys.secret), ctx)
    check_precision(np.roll(z * z, -1), got, 27.0, 24.0)


# -- the selector and "auto" -------------------------------------------------------------------------

def _table(params, faster: dict):
    """A measurement table: at each level in ``faster`` the named method measured faster."""
    points = [{"fingerprint": selector.fingerprint(params, l), "params": params.name, "level": l,
               "hybrid_ms": 1.0 if m == "hybrid" else 2.0, "klss_ms": 2.0 if m == "hybrid" else 1.0}
              for l, m in faster.items()]
    return {"runs": [{"device": "test", "platform": selector.platform(), "date": "-", "points": points}]}


def test_selector_defaults_to_hybrid_and_follows_measurements():
    p = dataclasses.replace(ckks.toy_n12_klss(), keyswitch="auto")
    # the package's table has no point for this set: hybrid, and explain() says so
    assert [keyswitch.level_method(p, l) for l in range(p.max_level + 1)] == ["hybrid"] * 7
    assert "not measured" in selector.explain(p)[0][2]
    with selector.measurements_from(_table(p, {6: "klss", 5: "klss", 2: "hybrid"})):
        assert [selector.choose(p, l) for l in range(7)] == ["hybrid"] * 5 + ["klss"] * 2
        assert keyswitch.params_methods(p) == ("hybrid", "klss")
        # another platform's measurements do not count
        assert selector.choose(p, 6, on="tpu") == "hybrid"
        # forcing a method ignores the measurements
        assert keyswitch.params_methods(dataclasses.replace(p, keyswitch="hybrid")) == ("hybrid",)
    # another parameter set (different primes) does not match these points
    q = dataclasses.replace(p, alpha=2)
    with selector.measurements_from(_table(p, {6: "klss"})):
        assert selector.choose(q, 6) == "hybrid"
    # the shipped table is well formed
    table = selector.load()
    assert isinstance(table["runs"], list) and "about" in table


def test_auto_context_mixes_methods_with_the_same_bits(ckks_pair, rng):
    """keyswitch="auto" with KLSS measured faster at the top levels: those levels get KLSS
    tables, the others hybrid's, keys are MultiKeys (KLSS derived from the hybrid key), and every
    result equals the all-hybrid one."""
    p = dataclasses.replace(ckks.toy_n12_klss(), keyswitch="auto")
    with selector.measurements_from(_table(p, {6: "klss", 5: "klss"})):
        ctx = ckks.make_context(p)
        keys = ckks.keygen(ctx, HostRandom.insecure_deterministic(21), rotations=(1, -3))
    assert [type(t).__name__ for t in ctx.keyswitch] == ["HybridTables"] * 5 + ["KLSSTables"] * 2
    assert isinstance(keys.evaluation.relin, keyswitch.MultiKey)
    assert sorted(keys.evaluation.relin.keys) == ["hybrid", "klss"]
    hctx, hkeys = ckks_pair["hybrid"]
    _assert_same(keys.evaluation.relin.keys["hybrid"].data, hkeys.evaluation.relin.data)
    z = rng.uniform(-1, 1, 2048) + 1j * rng.uniform(-1, 1, 2048)
    for level in (6, 3):
        a, ha = _encrypt(z, ctx, keys, 3, level), _encrypt(z, hctx, hkeys, 3, level)
        _assert_same(ckks.mul(a, a, ctx, keys.evaluation).data, ckks.mul(ha, ha, hctx, hkeys.evaluation).data)
        _assert_same(ckks.rotate(a, 1, ctx, keys.evaluation).data, ckks.rotate(ha, 1, hctx, hkeys.evaluation).data)


# -- bad input ----------------------------------------------------------------------------------------

def test_bad_inputs(chain):
    primes, num_q, alpha = chain
    ring = rns.make_context(primes, N)
    layout = klss.klss_layout(primes, num_q, alpha, N, block=2)
    other = klss.klss_layout(primes, num_q, alpha, N, block=3)
    kt = klss.make_klss_tables((0, 1, 2), (5, 6), layout)
    (hkey,), _ = _keys(ring, primes, num_q, alpha, 4)
    x = jnp.zeros((3, N), jnp.uint32)
    with pytest.raises(TypeError, match="needs a KLSSKey"):
        keyswitch.key_switch(x, hkey, ring, kt)
    with pytest.raises(ValueError, match="the key was made for"):
        klss.key_switch(x, klss.key_from_hybrid(hkey, ring, other), ring, kt)
    with pytest.raises(ValueError, match=r"expected \[\.\.\., 3, N\]"):
        klss.decompose(jnp.zeros((4, N), jnp.uint32), ring, kt)
    with pytest.raises(TypeError, match="MultiKey holds keys for"):
        keyswitch.key_switch(x, keyswitch.MultiKey(keys={"hybrid": hkey}), ring, kt)
    with pytest.raises(ValueError, match="klss_block"):
        klss.klss_layout(primes, num_q, alpha, N, block=0)
    with pytest.raises(ValueError, match="klss_block"):
        klss.klss_layout(primes, num_q, alpha, N, block=17)
    with pytest.raises(ValueError, match="klss_t_count"):
        klss.klss_layout(primes, num_q, alpha, N, block=2, t_count=17)
    with pytest.raises(ValueError, match="klss_t_bits"):
        klss.klss_layout(primes, num_q, alpha, N, t_bits=32)
    with pytest.raises(ValueError, match="differ from the ring"):
        klss.make_layout(primes, num_q, alpha, N, 2, (primes[0],), check=False)
    with pytest.raises(ValueError, match="must be q rows"):
        klss.make_klss_tables((0, 5), (6,), layout)
    with pytest.raises(ValueError, match="does not match"):
        klss.key_from_hybrid(dataclasses.replace(hkey, alpha=1), ring, layout)
    # parameter sets: unknown methods and options, unhashable values
    base = ckks.toy_n12_klss()
    with pytest.raises(ValueError, match="unknown key-switching method"):
        dataclasses.replace(base, keyswitch="klsss")
    with pytest.raises(ValueError, match="unknown keyswitch option"):
        dataclasses.replace(base, keyswitch_options={"klss_blocks": 4})
    assert dataclasses.replace(base, keyswitch="hybrid").keyswitch_options == (("klss_block", 4),)
    with pytest.raises(TypeError, match="hashable"):
        dataclasses.replace(base, keyswitch_options={"klss_block": [4]})
    assert dataclasses.replace(base, keyswitch_options={"klss_block": 2}).keyswitch_options == (("klss_block", 2),)
    with pytest.raises(ValueError, match="klss_t_count"):
        ckks.make_context(dataclasses.replace(base, keyswitch_options={"klss_t_count": 2}))


def test_bench_klss_records_what_the_selector_reads(tmp_path):
    """benchmarks/bench_klss.py --record: a run's points replace earlier ones with the same
    fingerprint on this platform, and keyswitch="auto" follows them."""
    from conftest import benchmarks_importable
    with benchmarks_importable():
        import bench_klss
    p = ckks.toy_n12_klss()
    assert [v.name for v in bench_klss.variants(ckks.toy_n12(), (1, 2, 6))] == ["toy-N12", "toy-N12-a1", "toy-N12-a2"]
    assert bench_klss.with_blocks([p], "2,3")[1].keyswitch_options == (("klss_block", 3),)
    path = tmp_path / "m.json"
    path.write_text('{"about": "", "runs": []}')
    pt = lambda l, h, k: {"fingerprint": selector.fingerprint(p, l), "params": p.name, "level": l,  # noqa: E731
                          "hybrid_ms": h, "klss_ms": k}
    bench_klss.record([pt(6, 2.0, 1.0), pt(5, 1.0, 2.0)], "dev A", path)
    bench_klss.record([pt(6, 1.0, 3.0)], "dev B", path)
    import json
    table = json.loads(path.read_text())
    assert [(r["device"], len(r["points"])) for r in table["runs"]] == [("dev A", 1), ("dev B", 1)]
    auto = dataclasses.replace(p, keyswitch="auto")
    with selector.measurements_from(table):
        assert [keyswitch.level_method(auto, l) for l in (4, 5, 6)] == ["hybrid", "hybrid", "hybrid"]
    bench_klss.record([pt(6, 2.0, 1.0)], "dev C", path)
    with selector.measurements_from(json.loads(path.read_text())):
        assert keyswitch.level_method(auto, 6) == "klss"
