"""Inputs that used to give wrong numbers silently now raise, saying what the limit is: CKKS
values (and constants) too large for the level's modulus, values that are not finite, and host
residues that are not canonical."""
import math
import re
import warnings

import numpy as np
import pytest

from jax_fhe import ckks, ops, rns
from jax_fhe.rns import HostRandom


@pytest.fixture(scope="module")
def toy():
    params = ckks.toy_n12()
    ctx = ckks.make_context(params)
    keys = ckks.keygen(ctx, HostRandom.insecure_deterministic(8))
    return params, ctx, keys


def _limit(params, level, scale=None):
    """(Q_l / 2) / scale: the largest magnitude that always fits."""
    scale = params.default_scale(level) if scale is None else scale
    return 2.0 ** (math.log2((params.modulus(level) - 1) // 2) - math.log2(scale))


@pytest.mark.parametrize("level, value", [(0, 1e4), (None, 1e80)])
def test_encode_too_large_for_the_level_raises(toy, level, value):
    """The two cases of the issue: 1e4 at level 0 and 1e80 at the top level used to decode to
    wrong numbers (-172.5 and 2.6e74)."""
    params, ctx, _ = toy
    lvl = params.default_level if level is None else level
    fit = re.escape(f"{_limit(params, lvl):.3g}")
    with pytest.raises(ValueError, match=rf"too large for level {lvl}.*values up to ~{fit} in magnitude"):
        ckks.encode(np.full(params.slots, value), ctx, level=level)


def test_encode_at_the_limit_round_trips(toy):
    """Just below the bound encodes and decodes exactly; just above raises. A constant vector
    puts its value in coefficient 0, so the bound is exact for it."""
    params, ctx, _ = toy
    for level in (0, 3):
        lim = _limit(params, level)
        ok = 0.999 * lim
        got = ckks.decode(ckks.encode(np.full(8, ok), ctx, level=level), ctx, real=True)
        np.testing.assert_allclose(got, ok, rtol=1e-9)
        with pytest.raises(ValueError, match="too large"):
            ckks.encode(np.full(8, 1.001 * lim), ctx, level=level)
    # a smaller scale makes room: the bound scales with 1 / scale
    big = 100 * _limit(params, 0)
    got = ckks.decode(ckks.encode(np.full(8, big), ctx, level=0, scale=2.0**30), ctx, real=True)
    np.testing.assert_allclose(got, big, rtol=1e-6)


@pytest.mark.parametrize("value", [1e300, 1e308, -1e300, 1e300 + 1e300j])
def test_encode_huge_values_say_too_large_without_warnings(toy, value):
    """1e300 overflows to inf when scaled: that is 'too large', not 'not finite', and numpy
    emits no RuntimeWarning on the way."""
    params, ctx, _ = toy
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="too large") as info:
            ckks.encode(np.full(params.slots, value), ctx)
    assert "not finite" not in str(info.value)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, complex(0, np.nan)])
def test_encode_non_finite_values_say_not_finite(toy, value):
    params, ctx, _ = toy
    z = np.zeros(8, dtype=complex)
    z[3] = value
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="not finite"):
            ckks.encode(z, ctx)


@pytest.mark.parametrize("scale", [0.0, -1.0, math.inf, math.nan])
def test_encode_bad_scale(toy, scale):
    _, ctx, _ = toy
    with pytest.raises(ValueError, match="scale must be a finite positive"):
        ckks.encode(np.ones(8), ctx, scale=scale)


def test_constants_too_large_or_not_finite_raise(toy):
    """ckks.add/mul encode a number at the ciphertext's level: a constant whose scaled value
    exceeds Q/2 would wrap mod Q, one that is NaN used to raise a bare int() error."""
    params, ctx, keys = toy
    ct = ckks.encrypt(ckks.encode(np.ones(8), ctx), ctx, keys.public, HostRandom.insecure_deterministic(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for op in (ckks.add, ckks.mul):
            with pytest.raises(ValueError, match=f"too large for level {ct.level}"):
                op(ct, 1e300, ctx)
            with pytest.raises(ValueError, match="not finite"):
                op(ct, math.nan, ctx)
    # a large constant that fits still works
    out = ckks.decode(ckks.decrypt(ckks.add(ct, 1e30, ctx), ctx, keys.secret), ctx, real=True)
    np.testing.assert_allclose(out, 1e30 + 1, rtol=1e-9)


def test_host_residues_must_be_canonical():
    """numpy inputs to the kernel wrappers are checked (one host pass); the error names the
    limb, its prime and the offending value. reduce_mod takes any words."""
    n = 1024
    primes = rns.ntt_primes(30, 2, n)
    ctx = rns.make_context(primes, n)
    x = np.zeros((3, 2, n), np.uint32)
    x[2, 1, 7] = primes[1]
    table = rns.make_bconv_table(primes, rns.ntt_primes(31, 1, n))
    calls = {
        "ntt": lambda: ops.ntt(x, ctx), "intt": lambda: ops.intt(x, ctx),
        "add_mod": lambda: ops.add_mod(np.zeros_like(x), x, ctx), "sub_mod": lambda: ops.sub_mod(x, x, ctx),
        "mul_mod": lambda: ops.mul_mod(np.zeros_like(x), x, ctx), "neg_mod": lambda: ops.neg_mod(x, ctx),
        "mac_mod": lambda: ops.mac_mod(x, np.zeros_like(x), np.zeros_like(x), ctx),
        "mul_limb_consts": lambda: ops.mul_limb_consts(x, np.ones(2, np.uint32), ctx),
        "automorphism_coeff": lambda: ops.automorphism_coeff(x, 3, ctx),
        "bconv": lambda: ops.bconv(x, table),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=rf"{name}: inputs must be canonical.*limb 1 \(q = {primes[1]}\)"):
            call()
    # the same data reduced first is accepted, and reduce_mod itself takes it
    fixed = np.asarray(ops.reduce_mod(x, ctx))
    assert fixed[2, 1, 7] == 0
    ops.ntt(fixed, ctx)
    # rows pick the primes the check uses: q_1 < q_0 is a residue of q_0 but not of q_1
    assert primes[1] < primes[0]
    y = np.full((1, n), primes[1], np.uint32)
    ops.ntt(y, ctx, rows=(0,))
    with pytest.raises(ValueError, match="canonical"):
        ops.ntt(y, ctx, rows=(1,))


def test_to_residues_rejects_values_beyond_int64():
    big = np.array([1 << 63, 5], dtype=np.uint64)
    with pytest.raises(ValueError, match="does not fit int64"):
        rns.to_residues(big, [97])
    np.testing.assert_array_equal(rns.to_residues(np.array([-1, 5], np.int64), [97]), [[96, 5]])
