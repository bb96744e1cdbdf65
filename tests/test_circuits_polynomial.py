"""Polynomial evaluation (jax_fhe.circuits.polynomial) against numpy float64.

Homomorphic tests run on the insecure toy-N12 set (N = 2^12, 40-bit rational levels, not
nested: lowering a power to a leaf's level is a constant multiplication and a rescale). The
input is a fresh public-key encryption at level 6 (error ~2^-30.4 mean, 2^-27.9 max per the
ckks tests); the output error is about |p'(x)| times that plus one rescale per level
(~2^-31.5). Bounds: measured (in the comments, CPU) minus 1 bit for the mean and 2 for the max.
"""
import jax
import numpy as np
import pytest

from jax_fhe import ckks
from jax_fhe.circuits import polynomial as P
from jax_fhe.rns import HostRandom
from ckks_helpers import check_precision as _check
from ckks_helpers import decrypt_values as _dec
from ckks_helpers import encrypt_values


@pytest.fixture(scope="module")
def toy():
    ctx = ckks.make_context(ckks.toy_n12())
    keys = ckks.keygen(ctx, HostRandom.insecure_deterministic(21))
    return ctx, keys


@pytest.fixture
def env(toy, put):
    return put(toy)


def _enc(z, ctx, keys, seed, level=6):
    return encrypt_values(z, ctx, keys, seed, level)


# -- host side ----------------------------------------------------------------------------------

def test_chebyshev_interpolation_matches_numpy(rng):
    x = rng.uniform(-3, 5, 1000)
    p = P.chebyshev_interpolate(np.exp, 30, (-3, 5))
    assert p.basis == "chebyshev" and p.interval == (-3.0, 5.0) and p.degree == 30
    assert np.abs(p(x) - np.exp(x)).max() < 1e-14 * np.exp(5)  # measured 4e-15 e^5 (rounding)
    ref = np.polynomial.chebyshev.Chebyshev.interpolate(np.exp, 30, domain=[-3, 5])
    np.testing.assert_allclose(p.coeffs, ref.coef, rtol=0, atol=1e-12)
    even = P.chebyshev_interpolate(lambda t: np.cos(4 * t), 20, parity="even")
    assert even.parity == "even" and all(c == 0 for c in even.coeffs[1::2])
    assert np.abs(even(x / 5) - np.cos(4 * x / 5)).max() < 1e-12  # measured 1.6e-14
    odd = P.chebyshev_interpolate(np.sin, 9, parity="odd")
    assert odd.parity == "odd" and odd.degree == 9 and odd.depth == 4


def test_polynomial_properties():
    p = P.Polynomial((1, 0, 2, 0, 0))
    assert p.degree == 2 and p.parity == "even" and p.depth == 2 and p.coeffs == (1.0, 0.0, 2.0, 0.0, 0.0)
    assert P.Polynomial((0, 1, 0, 3), interval=(0, 2)).depth == 3  # 2 + the map onto [-1, 1]
    assert P.Polynomial((0.5, 1j)).coeffs == (0.5, 1j)
    m = P.Polynomial((1, 2, 3), "monomial")
    np.testing.assert_allclose(m(np.array([2.0])), [17.0])
    assert hash(m) == hash(P.Polynomial((1.0, 2.0, 3.0), "monomial"))
    with pytest.raises(ValueError, match="basis must be one of"):
        P.Polynomial((1, 2), "legendre")
    with pytest.raises(ValueError, match="non-empty"):
        P.Polynomial(())
    with pytest.raises(TypeError, match="finite real or complex"):
        P.Polynomial(("a", "b"))
    with pytest.raises(ValueError, match="a < b"):
        P.Polynomial((1, 2), interval=(1, -1))
    with pytest.raises(ValueError, match="monomial basis has no interval"):
        P.Polynomial((1, 2), "monomial", interval=(0, 1))
    with pytest.raises(ValueError, match="degree must be an integer >= 1"):
        P.chebyshev_interpolate(np.exp, 0)
    with pytest.raises(ValueError, match="parity"):
        P.chebyshev_interpolate(np.exp, 3, parity="both")


# -- homomorphic --------------------------------------------------------------------------------

def _cheb(f, d, interval=(-1, 1), parity=None):
    return P.chebyshev_interpolate(f, d, interval, parity=parity)


# name: (polynomial, input range, mean bound, max bound); measured (CPU) in the comments
CASES = {
    "exp-deg31": (_cheb(np.exp, 31), 1.0, 28.2, 24.6),  # 29.2 / 26.6
    "cos-even-deg30": (_cheb(lambda t: np.cos(3 * t), 30, parity="even"), 1.0, 27.3, 23.5),  # 28.3 / 25.5
    "sin-odd-deg15": (_cheb(lambda t: np.sin(3 * t), 15, parity="odd"), 1.0, 27.4, 23.7),  # 28.4 / 25.7
    "monomial-deg7": (P.Polynomial((0.1, -0.2, 0.15, 0.05, -0.1, 0.2, -0.07, 0.12), "monomial"),
                      1.0, 28.7, 24.3),  # 29.7 / 26.3
    "interval-deg15": (_cheb(lambda t: 1 / (1 + t * t), 15, (-2, 2)), 2.0, 27.8, 24.1),  # 28.8 / 26.1
    "complex-deg2": (P.Polynomial((0.5, -0.25j, 0.1 + 0.2j)), 1.0, 28.8, 25.4),  # 29.8 / 27.4
}


@pytest.mark.parametrize("name", list(CASES))
def test_evaluate_against_numpy(name, env, rng):
    ctx, keys = env
    poly, r, mean, worst = CASES[name]
    x = rng.uniform(-r, r, 2048)
    ct = _enc(x, ctx, keys, 31)
    out = P.evaluate(ct, poly, ctx, keys.evaluation)
    assert out.level == ct.level - poly.depth  # ceil(log2(d + 1)) (+ 1 for the interval map)
    assert out.scale == ctx.params.default_scale(out.level) and out.slots == ct.slots
    _check(poly(x), _dec(out, ctx, keys), mean, worst)


def test_output_scale_and_baby_steps(env, rng):
    ctx, keys = env
    x = rng.uniform(-1, 1, 256)
    ct = _enc(x, ctx, keys, 32)
    poly = P.chebyshev_interpolate(np.tanh, 12)
    for baby in (1, 2, 4):  # every split gives the same depth and a result on the asked scale
        out = P.evaluate(ct, poly, ctx, keys.evaluation, scale=2.0**38, baby_log=baby)
        assert out.level == ct.level - 4 and out.scale == 2.0**38 and out.slots == 256
        _check(poly(x), _dec(out, ctx, keys), 26.1, 23.1)  # measured >= 27.1 / 25.1 (scale 2^38)


def test_jit_equals_eager(env, rng):
    ctx, keys = env
    x = rng.uniform(-1, 1, 2048)
    ct = _enc(x, ctx, keys, 33, level=4)
    poly = P.chebyshev_interpolate(lambda t: np.cos(2 * t), 6, parity="even")
    eager = P.evaluate(ct, poly, ctx, keys.evaluation)
    jitted = jax.jit(lambda c, cx, k: P.evaluate(c, poly, cx, k))(ct, ctx, keys.evaluation)
    assert (jitted.level, jitted.scale) == (eager.level, eager.scale) == (1, ctx.params.default_scale(1))
    np.testing.assert_array_equal(np.asarray(jitted.data), np.asarray(eager.data))


def test_bad_input(env, rng):
    ctx, keys = env
    ct = _enc(rng.uniform(-1, 1, 16), ctx, keys, 34, level=2)
    with pytest.raises(ValueError, match="needs 3 levels"):
        P.evaluate(ct, P.Polynomial((0, 1, 0, 0, 1)), ctx, keys.evaluation)
    with pytest.raises(ValueError, match="constant"):
        P.evaluate(ct, P.Polynomial((2.0, 0.0)), ctx, keys.evaluation)
    with pytest.raises(TypeError, match="Polynomial"):
        P.evaluate(ct, (1.0, 2.0), ctx, keys.evaluation)
    with pytest.raises(ValueError, match="relinearization key"):
        P.evaluate(ct, P.Polynomial((0, 1, 1)), ctx, None)
    with pytest.raises(ValueError, match="baby_log"):
        P.evaluate(ct, P.Polynomial((0, 1, 1)), ctx, keys.evaluation, baby_log=0)
