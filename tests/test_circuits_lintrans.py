"""Linear transforms in diagonal form (jax_fhe.circuits.lintrans) against numpy.

Homomorphic tests run on the insecure toy-N12 set at level 5 (fresh public-key encryption:
~2^-30.4 mean slot error). M z sums |M| terms per slot, so its error is about the input error
times the rms row norm of M, plus the rotations' key-switching noise and one rescale. Bounds:
measured (in the comments, CPU) minus 1 bit for the mean and 2 for the max."""
import jax
import numpy as np
import pytest

from jax_fhe import ckks
from jax_fhe.circuits import lintrans as LT
from jax_fhe.rns import HostRandom
from ckks_helpers import check_precision as _check
from ckks_helpers import decrypt_values as _dec
from ckks_helpers import encrypt_values

DENSE_N = 16
BAND = (-3, -2, -1, 0, 1, 2, 3, 17, 1000)


def _cplx(rng, shape):
    return rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)


@pytest.fixture(scope="module")
def toy():
    ctx = ckks.make_context(ckks.toy_n12())
    rng = np.random.default_rng(7)
    dense = LT.diagonals(_cplx(rng, (DENSE_N, DENSE_N)) / 4)
    band = {k: _cplx(rng, 2048) / 3 for k in BAND}
    plans = {"dense": LT.make_linear_transform(dense, ctx, 5),
             "band": LT.make_linear_transform(band, ctx, 5)}
    keys = ckks.keygen(ctx, HostRandom.insecure_deterministic(41),
                       rotations=LT.rotation_steps(*plans.values()))
    return ctx, keys, {"dense": dense, "band": band}, plans


@pytest.fixture
def env(toy, put):
    ctx, keys, diags, plans = toy
    return put(ctx), put(keys), diags, put(plans)


def _enc(z, ctx, keys, seed, level=5):
    return encrypt_values(z, ctx, keys, seed, level)


# -- host side ----------------------------------------------------------------------------------

def test_diagonal_form_round_trip_and_products(rng):
    n = 8
    a, b = _cplx(rng, (n, n)), _cplx(rng, (n, n))
    k = np.subtract.outer(np.arange(n), np.arange(n)) % n  # (column - row) mod n, transposed
    a[(k.T == 3) | (k.T == 5)] = 0  # diagonals 3 and 5 are zero
    da, db = LT.diagonals(a), LT.diagonals(b)
    assert sorted(da) == [0, 1, 2, 4, 6, 7] and len(db) == n
    np.testing.assert_array_equal(LT.matrix(da), a)
    z = _cplx(rng, (3, n))
    np.testing.assert_allclose(LT.apply_diagonals(da, z), z @ a.T, atol=1e-14)
    np.testing.assert_allclose(LT.matrix(LT.compose(da, db)), a @ b, atol=1e-13)
    # negative indices are read mod n and summed
    want = 2 * np.roll(np.eye(n), -1, 0).T  # M[j, j - 1] = 2
    np.testing.assert_array_equal(LT.matrix({-1: np.ones(n), n - 1: np.ones(n)}), want)


def test_bsgs_split():
    n = 2048
    b, groups = LT.bsgs_split(range(-15, 16), n)  # a band of 31 diagonals: 8 baby x 4 giant steps
    assert b == 8 and sorted(groups) == [0, 8, n - 16, n - 8]
    assert [len(groups[g]) for g in (0, 8, n - 16, n - 8)] == [8, 8, 7, 8]
    got = sorted((g + bb) % n for g, bs in groups.items() for bb in bs)
    assert got == sorted(k % n for k in range(-15, 16))
    assert LT.bsgs_split([0, 5], 16, baby=16) == (16, {0: (0, 5)})
    # 63 diagonals: B = 8 (7 baby, 7 giant steps) and B = 16 (15 baby, 3 giant) tie at a giant
    # step's weight 2 (the smaller B wins); weighed 3, B = 16
    assert LT.bsgs_split(range(-31, 32), n)[0] == 8
    b3, g3 = LT.bsgs_split(range(-31, 32), n, giant_cost=3)
    assert b3 == 16 and sorted(g3) == [0, 16, n - 32, n - 16]
    with pytest.raises(ValueError, match="power of two dividing"):
        LT.bsgs_split([1], 16, baby=3)
    with pytest.raises(ValueError, match="no diagonal"):
        LT.bsgs_split([], 16)


def test_host_bad_input():
    with pytest.raises(TypeError, match="non-empty dict"):
        LT.matrix({})
    with pytest.raises(ValueError, match="shape"):
        LT.matrix({0: np.ones(4), 1: np.ones(5)})
    with pytest.raises(TypeError, match="indices must be ints"):
        LT.matrix({0.5: np.ones(4)})
    with pytest.raises(ValueError, match="square"):
        LT.diagonals(np.ones((2, 3)))


# -- homomorphic --------------------------------------------------------------------------------

@pytest.mark.parametrize("name,slots,mean,worst", [
    ("dense", DENSE_N, 29.2, 27.2),  # measured 30.2 / 29.2: 16 diagonals, 4 baby x 4 giant
    ("band", 2048, 28.7, 25.4),  # measured 29.7 / 27.4: 9 diagonals incl. 17 and 1000
])
def test_linear_transform_against_numpy(name, slots, mean, worst, env, rng):
    ctx, keys, diags, plans = env
    lt = plans[name]
    assert lt.level == 5 and lt.scale == float(ctx.params.ratio(5)) and lt.slots == slots
    z = _cplx(rng, slots)
    ct = _enc(z, ctx, keys, 51)
    out = LT.linear_transform(ct, lt, ctx, keys.evaluation)
    assert out.level == 4 and out.scale == ct.scale and out.slots == slots  # one level, same label
    _check(LT.apply_diagonals(diags[name], z), _dec(out, ctx, keys), mean, worst)


def test_plan_structure_and_steps(env):
    ctx, _, diags, plans = env
    lt = plans["band"]
    # double-hoisted plans hold the diagonals on the level's 9 rows and the 4 special rows
    assert lt.data.shape == (len(BAND), 9 + 4, 4096) and lt.data.dtype == np.uint32
    pairs = sorted((g + b) % 2048 for g, entries in lt.giants for b, _ in entries)
    assert pairs == sorted(k % 2048 for k in BAND)
    assert LT.rotation_steps(lt) == tuple(sorted((set(lt.baby_steps) | set(lt.giant_steps)) - {0}))
    leaves = jax.tree_util.tree_leaves(lt)
    assert len(leaves) == 1 and leaves[0] is lt.data  # one device array, the rest static
    # 16 slots at N = 4096: a polynomial in X^128, each NTT value held once for its 128 copies
    assert plans["dense"].data.shape == (DENSE_N, 9 + 4, 4096 // 128)


def test_unrescaled_higher_level_and_periodic_input(env, rng):
    ctx, keys, diags, plans = env
    lt = plans["dense"]
    z = _cplx(rng, DENSE_N // 2)  # an 8-periodic vector is a 16-periodic one
    ct = _enc(z, ctx, keys, 52, level=6)  # lowered to the plan's level first
    out = LT.linear_transform(ct, lt, ctx, keys.evaluation, rescale=False)
    assert out.level == 5 and out.slots == DENSE_N
    assert out.scale == pytest.approx(ct.scale * lt.scale, rel=1e-6)
    # measured 30.1 / 29.3
    _check(LT.apply_diagonals(diags["dense"], np.tile(z, 2)), _dec(out, ctx, keys), 29.1, 27.3)


def test_jit_equals_eager(env, rng):
    ctx, keys, _, plans = env
    ct = _enc(_cplx(rng, DENSE_N), ctx, keys, 53)
    eager = LT.linear_transform(ct, plans["dense"], ctx, keys.evaluation)
    jitted = jax.jit(LT.linear_transform)(ct, plans["dense"], ctx, keys.evaluation)
    assert (jitted.level, jitted.scale, jitted.slots) == (eager.level, eager.scale, eager.slots)
    np.testing.assert_array_equal(np.asarray(jitted.data), np.asarray(eager.data))


def test_compact_plan(env, rng):
    """A compact plan (int32 coefficients + a power-of-two unit per diagonal, expanded in the
    program) holds 4 N / r bytes per diagonal (r = N / 2n: 1 for the band's 2048 slots); when every coefficient fits its bits (shift 0) the
    output is bit-identical to the encoded plan's, otherwise within the rounding: the band
    plan (shift 5 at scale 2^40) measured 29.4 bits mean / 27.5 min on CPU."""
    ctx, keys, diags, plans = env
    band = LT.make_linear_transform(diags["band"], ctx, 5, compact=True)
    assert band.compact and not plans["band"].compact
    assert band.data.dtype == np.int32 and band.data.shape == (len(diags["band"]), ctx.params.n)
    assert band.units.shape == (len(diags["band"]), len(ctx.params.rows(5)) + ctx.params.alpha)
    assert 0 < band.max_shift <= 16 and "compact" in repr(band)
    z = _cplx(rng, 2048)
    ct = _enc(z, ctx, keys, 11)
    got = _dec(jax.jit(LT.linear_transform)(ct, band, ctx, keys.evaluation), ctx, keys)
    _check(LT.apply_diagonals(diags["band"], z), got, 28.4, 25.5)
    tiny = {k: d * 2.0**-14 for k, d in diags["band"].items()}   # coefficients below 2^24: shift 0
    exact = LT.make_linear_transform(tiny, ctx, 5, compact=True)
    assert exact.max_shift == 0
    want = LT.linear_transform(ct, LT.make_linear_transform(tiny, ctx, 5), ctx, keys.evaluation)
    np.testing.assert_array_equal(np.asarray(LT.linear_transform(ct, exact, ctx, keys.evaluation).data),
                                  np.asarray(want.data))
    # a sparse plan (16 slots: its encoded words stand for 128 NTT values each) against the
    # compact one, which expands whole polynomials: the same bits
    small = {k: d * 2.0**-14 for k, d in diags["dense"].items()}
    ct16 = _enc(_cplx(rng, DENSE_N), ctx, keys, 12)
    sparse = LT.make_linear_transform(small, ctx, 5)
    whole = LT.make_linear_transform(small, ctx, 5, compact=True)
    assert sparse.data.shape[-1] == 32 and whole.data.shape == (DENSE_N, 32) and whole.max_shift == 0
    np.testing.assert_array_equal(np.asarray(LT.linear_transform(ct16, sparse, ctx, keys.evaluation).data),
                                  np.asarray(LT.linear_transform(ct16, whole, ctx, keys.evaluation).data))


def test_compact_coefficients_host(toy):
    """ckks.compact_coefficients: 2^s k within 2^(s-1) of encode()'s integer coefficients,
    |k| <= 2^bits, s minimal; bad bits are refused."""
    from jax_fhe.ckks.encoder import scaled_coefficients
    ctx = toy[0]
    z = np.random.default_rng(5).uniform(-1, 1, (3, 2048)) * np.array([[1.0], [2.0**-20], [0.0]])
    k, s = ckks.compact_coefficients(z, ctx, level=5, scale=2.0**40, bits=24)
    c, _, _, _ = scaled_coefficients(z, ctx, level=5, scale=2.0**40)
    assert k.dtype == np.int32 and np.abs(k).max() <= 2**24
    assert list(s) == [int(np.frexp(np.abs(c[0]).max())[1]) - 24, 0, 0]
    assert np.all(np.abs(k * np.ldexp(1.0, s)[:, None] - c) <= np.ldexp(0.5, s)[:, None])
    np.testing.assert_array_equal(k[1], c[1])
    with pytest.raises(ValueError, match="bits"):
        ckks.compact_coefficients(z, ctx, level=5, scale=2.0**40, bits=31)


def test_bad_input(env, rng):
    ctx, keys, _, plans = env
    lt = plans["dense"]
    ct = _enc(_cplx(rng, DENSE_N), ctx, keys, 54, level=4)
    with pytest.raises(ValueError, match="plan is for level 5"):
        LT.linear_transform(ct, lt, ctx, keys.evaluation)
    with pytest.raises(ValueError, match="acts on 16 slots"):
        LT.linear_transform(_enc(_cplx(rng, 32), ctx, keys, 55), lt, ctx, keys.evaluation)
    no_keys = ckks.EvalKeys(relin=None, rotations={}, conjugation=None, params=ctx.params)
    with pytest.raises(ValueError, match="no rotation key"):
        LT.linear_transform(_enc(_cplx(rng, DENSE_N), ctx, keys, 56), lt, ctx, no_keys)
    with pytest.raises(TypeError, match="LinearTransform"):
        LT.linear_transform(ct, {0: np.ones(16)}, ctx, keys.evaluation)
    with pytest.raises(ValueError, match="level 0 has none"):
        LT.make_linear_transform({0: np.ones(16)}, ctx, 0)
    with pytest.raises(ValueError, match="power of two"):
        LT.make_linear_transform({0: np.ones(12)}, ctx, 3)
