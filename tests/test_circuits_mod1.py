"""EvalMod (jax_fhe.circuits.mod1) against numpy: the approximation on the host, the circuit on
the insecure toy-boot-n12 set (EvalMod levels 15 -> 7, 2^58 per level; output at level 7 with
its default scale 2^40).

Inputs u = I + e with |I| <= 15 and |e| <= 2^-9, encrypted as u / K at level 15 (scale 2^57.8:
input error ~2^-47, times 2 pi K through the map). The output error against
(1/2 pi) sin(2 pi u) is the fit's (<= 2^-30.3, host) plus the last rescale's rounding at 2^40;
against e = u mod 1 it is dominated by the sine's own (2 pi)^2 e^3 / 6 (2^-24.3 at |e| = 2^-9).
Bounds: measured (in the comments, CPU) minus 1 bit for the mean and 2 for the max."""
import numpy as np
import pytest

from jax_fhe import ckks
from jax_fhe.circuits import mod1 as M
from jax_fhe.rns import HostRandom
from ckks_helpers import check_precision as _check

EPS = 2.0**-9


def _samples(rng, n, k=16):
    i = rng.integers(-(k - 1), k, n)
    e = rng.uniform(-EPS, EPS, n)
    return i + e, e


# -- host side ----------------------------------------------------------------------------------

# measured log2 errors (K = 16, degree 30, r = 3), |e| <= 2^-9, both signs of I
PROFILE = {0: -36.8, 1: -35.6, 2: -34.9, 3: -34.7, 4: -31.8, 5: -33.7, 6: -33.7, 7: -32.5, 8: -30.9,
           9: -32.5, 10: -32.8, 11: -32.1, 12: -30.3, 13: -32.3, 14: -33.1, 15: -31.5, 16: -30.4}


def test_default_fit_error_profile():
    mp = M.Mod1Params()
    assert (mp.K, mp.degree, mp.double_angle, mp.arcsine_degree) == (16, 30, 3, 0)
    assert mp.cosine.degree == 30 and mp.cosine.parity == "even" and mp.depth == 8
    prof = M.error_profile(mp)
    assert sorted(prof) == list(range(17))
    for i, bits in prof.items():
        assert bits <= PROFILE[i] + 0.1, (i, bits)


def test_reference_against_sine_and_mod1(rng):
    u, e = _samples(rng, 20000)
    mp = M.Mod1Params()
    got = M.mod1_reference(u, mp)
    assert np.abs(got - np.sin(2 * np.pi * u) / (2 * np.pi)).max() < 2.0**-30.2
    assert np.abs(got - e).max() < 2.0**-24.2  # the sine's own error, (2 pi)^2 e^3 / 6
    ma = M.Mod1Params(arcsine_degree=7)
    assert ma.arcsine.parity == "odd" and ma.depth == 11
    assert np.abs(M.mod1_reference(u, ma) - e).max() < 2.0**-30.2  # the arcsine removes it


def test_other_parameters():
    mp = M.Mod1Params(K=8, degree=22, double_angle=3)  # cos(2 pi y): a lower degree suffices
    assert mp.depth == 5 + 3 and mp.a0 == pytest.approx((2 * np.pi) ** -0.125)
    assert max(M.error_profile(mp).values()) < -35.0  # measured -35.5 (|I| <= 8)


def test_bad_parameters():
    with pytest.raises(ValueError, match="even degree"):
        M.Mod1Params(degree=31)
    with pytest.raises(ValueError, match="arcsine_degree must be 0 or odd"):
        M.Mod1Params(arcsine_degree=4)
    with pytest.raises(ValueError, match="non-negative integer"):
        M.Mod1Params(K=-1)
    with pytest.raises(ValueError, match="non-negative integer"):
        M.Mod1Params(double_angle=1.5)


# -- homomorphic --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def boot(toy_boot_context):
    keys = ckks.keygen(toy_boot_context, HostRandom.insecure_deterministic(81))
    return toy_boot_context, keys


@pytest.fixture
def env(boot, put):
    return put(boot)


from ckks_helpers import encrypt_values as _enc  # noqa: E402


def _dec(ct, ctx, keys):
    return ckks.decode(ckks.decrypt(ct, ctx, keys.secret), ctx, real=True)


def test_eval_mod1(env, rng):
    ctx, keys = env
    mp = M.Mod1Params()
    u, e = _samples(rng, 2048)
    out = M.eval_mod1(_enc(u / mp.K, ctx, keys, 91, 15), mp, ctx, keys.evaluation)
    assert out.level == 7 and out.scale == ctx.params.default_scale(7)
    got = _dec(out, ctx, keys)
    _check(np.sin(2 * np.pi * u) / (2 * np.pi), got, 29.2, 25.4)  # measured 30.2 / 27.4
    _check(e, got, 25.3, 22.2)  # measured 26.3 / 24.2


def test_eval_mod1_arcsine_and_scale(env, rng):
    ctx, keys = env
    mp = M.Mod1Params(arcsine_degree=7)
    u, e = _samples(rng, 2048)
    out = M.eval_mod1(_enc(u / mp.K, ctx, keys, 92, 18), mp, ctx, keys.evaluation, scale=2.0**45)
    assert out.level == 7 and out.scale == 2.0**45
    _check(e, _dec(out, ctx, keys), 31.8, 28.2)  # measured 32.8 / 30.2


def test_bad_input(env, rng):
    ctx, keys = env
    ct = _enc(np.zeros(4), ctx, keys, 93, 7)
    with pytest.raises(ValueError, match="needs 8 levels"):
        M.eval_mod1(ct, M.Mod1Params(), ctx, keys.evaluation)
    with pytest.raises(TypeError, match="Mod1Params"):
        M.eval_mod1(ct, (16, 30, 3), ctx, keys.evaluation)
