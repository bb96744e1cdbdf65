"""The homomorphic special DFT (jax_fhe.circuits.dft): host factorization against the encoder's
embedding, and CoeffToSlot / SlotToCoeff on the insecure toy-boot-n12 set against numpy.

Homomorphic inputs are fresh public-key encryptions at level 18 (CtS levels, default scale
2^52.2, so the input error is ~2^-42); CtS outputs the coefficients, which are ~2^-6 of the
slot values for 2048 random slots. Bounds: measured (in the comments, CPU) minus 1 bit for the
mean and 2 for the max."""
import numpy as np
import pytest

from jax_fhe import ckks
from jax_fhe.ckks import encoder
from jax_fhe.circuits import dft
from jax_fhe.circuits import lintrans as LT
from jax_fhe.rns import HostRandom
from ckks_helpers import check_precision as _check
from ckks_helpers import decrypt_values as _dec
from ckks_helpers import encrypt_values

FULL, SPARSE = 2048, 64


def _cplx(rng, shape):
    return rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)


def _product(phases, n):
    m = np.eye(n, dtype=np.complex128)
    for ph in phases:
        m = LT.matrix(ph, n) @ m
    return m


def _coefficients(z, n, big_n):
    """t_0 .. t_{2n-1}: coefficients (in Y = X^(N/2n)) of the polynomial with n slots z."""
    return encoder.embed_inverse(np.tile(z, big_n // 2 // n), big_n)[:: big_n // (2 * n)]


# -- host side ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 8, 256, 2048])
def test_special_fft_matrix_is_the_encoders_embedding(n, rng):
    big_n = 4096
    z = _cplx(rng, n)
    t = _coefficients(z, n, big_n)
    v = dft.special_fft_matrix(n)
    np.testing.assert_allclose(v @ (t[:n] + 1j * t[n:]), z, rtol=0, atol=1e-13)  # measured <= 2e-15


@pytest.mark.parametrize("n,levels", [(2, 1), (4, 1), (4, 2), (64, 1), (64, 2), (64, 3), (64, 6),
                                      (256, 3), (256, 8)])
def test_phase_products(n, levels):
    v = dft.special_fft_matrix(n)
    r = np.eye(n)[dft.bit_reverse(n)]  # (R w)[k] = w[br(k)]
    cts = dft.cts_matrices(n, levels, factor=3.0)
    stc = dft.stc_matrices(n, levels, factor=0.5 - 0.25j)
    assert len(cts) == len(stc) == levels
    # measured <= 2.3e-15 (n = 256)
    np.testing.assert_allclose(_product(cts, n), 3.0 * r @ np.linalg.inv(v), rtol=0, atol=1e-13)
    np.testing.assert_allclose(_product(stc, n), (0.5 - 0.25j) * v @ r.T, rtol=0, atol=1e-13)
    log_n = n.bit_length() - 1
    # a phase of s stages (strides 2^a .. 2^(a+s-1)) has at most 2^(s+1) - 1 diagonals
    counts = dft.split_stages(log_n, levels, front=True)
    assert all(len(ph) <= 2 ** (s + 1) - 1 for ph, s in zip(cts, counts))


@pytest.mark.parametrize("levels", [3, 4])
def test_phases_against_the_encoder_full_slots(levels, rng):
    """N = 4096, n = 2048 (dense products are too slow here): the phases applied to random
    slot vectors give the encoder's coefficients (CtS) and back (StC)."""
    n = FULL
    z = _cplx(rng, (4, n))
    t = np.stack([_coefficients(zz, n, 2 * n) for zz in z])
    br = dft.bit_reverse(n)
    x = t[:, :n][:, br] + 1j * t[:, n:][:, br]
    y = z
    for ph in dft.cts_matrices(n, levels, factor=2.0):
        y = LT.apply_diagonals(ph, y)
    np.testing.assert_allclose(y, 2.0 * x, rtol=0, atol=1e-14)  # measured 1.2e-16 (|x| ~ 2^-6)
    for ph in dft.stc_matrices(n, levels):
        x = LT.apply_diagonals(ph, x)
    np.testing.assert_allclose(x, z, rtol=0, atol=1e-13)  # measured 2.7e-15


def test_packed_phases(rng):
    n = 16
    z, a, b = _cplx(rng, n), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    plain = dft.cts_matrices(n, 2)
    packed = dft.cts_matrices(n, 2, packed=True)
    x = LT.apply_diagonals(plain[0], z)
    want = LT.apply_diagonals(plain[1], x)
    np.testing.assert_allclose(LT.apply_diagonals(packed[1], np.tile(x, 2)),
                               np.concatenate([want, -1j * want]), atol=1e-14)
    plain = dft.stc_matrices(n, 2)
    packed = dft.stc_matrices(n, 2, packed=True)
    v = LT.apply_diagonals(packed[0], np.concatenate([a, b]))
    v = v + np.roll(v, -n)  # + rot_n
    want = LT.apply_diagonals(plain[0], a + 1j * b)
    np.testing.assert_allclose(v, np.tile(want, 2), atol=1e-14)


def test_layout_helpers():
    br = dft.bit_reverse(64)
    np.testing.assert_array_equal(br[br], np.arange(64))
    assert list(dft.bit_reverse(8)) == [0, 4, 2, 6, 1, 5, 3, 7]
    assert dft.split_stages(11, 3, front=True) == (4, 4, 3)
    assert dft.split_stages(11, 3, front=False) == (3, 4, 4)
    with pytest.raises(ValueError, match="levels must be an integer"):
        dft.split_stages(4, 5, front=True)
    with pytest.raises(ValueError, match="power of two"):
        dft.special_fft_matrix(12)
    with pytest.raises(ValueError, match="sum to log2"):
        dft.cts_matrices(16, 2, radix_logs=(1, 2))


# -- homomorphic --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def boot(toy_boot_context):
    ctx = toy_boot_context
    plans = {
        "cts": dft.make_cts(ctx, FULL, 18, 3),
        "stc": dft.make_stc(ctx, FULL, 15, 3, factor=0.5),
        "cts_packed": dft.make_cts(ctx, SPARSE, 18, 2, packed=True, factor=0.5),
        "stc_packed": dft.make_stc(ctx, SPARSE, 15, 2, packed=True),
        "cts_sparse": dft.make_cts(ctx, SPARSE, 18, 3, radix_logs=(1, 2, 3)),
        "stc_sparse": dft.make_stc(ctx, SPARSE, 15, 3),
    }
    steps = dft.rotation_steps(*plans.values())
    keys = ckks.keygen(ctx, HostRandom.insecure_deterministic(61), rotations=steps, conjugation=True)
    return ctx, keys, plans


@pytest.fixture
def env(boot, put):
    return put(boot)


def _enc(z, ctx, keys, seed, level=18):
    return encrypt_values(z, ctx, keys, seed, level)


def test_plans(env):
    _, _, plans = env
    cts, stc = plans["cts"], plans["stc"]
    assert [lt.level for lt in cts.phases] == [18, 17, 16] and cts.depth == 3
    assert [lt.level for lt in stc.phases] == [15, 14, 13]
    assert [len(lt.giants) for lt in cts.phases] == [4, 4, 4]
    assert plans["cts_packed"].phases[-1].slots == 2 * SPARSE
    assert SPARSE in dft.rotation_steps(plans["stc_packed"])  # the + rot_n


def test_full_slots(env, rng):
    """CtS: slot k = t_br(k) + i t_{n+br(k)}; the split gives 2 t_br(k) and 2 t_{n+br(k)}; StC
    (factor 1/2) of re + i im gives back the slots."""
    ctx, keys, plans = env
    z = _cplx(rng, FULL)
    t = _coefficients(z, FULL, ctx.params.n)
    br = dft.bit_reverse(FULL)
    ct = _enc(z, ctx, keys, 71)
    u = dft.coeffs_to_slots(ct, plans["cts"], ctx, keys.evaluation)
    assert u.level == 15 and u.scale == ct.scale and u.slots == FULL
    _check(t[:FULL][br] + 1j * t[FULL:][br], _dec(u, ctx, keys), 41.6, 38.2)  # measured 42.6 / 40.2
    re, im = dft.real_imag_split(u, ctx, keys.evaluation)
    _check(2 * t[:FULL][br], _dec(re, ctx, keys), 41.0, 37.4)  # measured 42.0 / 39.4
    _check(2 * t[FULL:][br], _dec(im, ctx, keys), 41.0, 36.9)  # measured 42.0 / 38.9
    w = ckks.add(re, ckks.mul_i(im, ctx), ctx)
    y = dft.slots_to_coeffs(w, plans["stc"], ctx, keys.evaluation)
    assert y.level == 12 and y.scale == ct.scale and y.slots == FULL
    _check(z, _dec(y, ctx, keys), 35.9, 33.2)  # measured 36.9 / 35.2


def test_sparse_packed(env, rng):
    """n = 64 slots: packed CtS gives 2n slots (factor/2) [x, -i x]; conj_add gives the 2n
    coefficients (bit-reversed halves); packed StC maps them back to the n slots."""
    ctx, keys, plans = env
    z = _cplx(rng, SPARSE)
    t = _coefficients(z, SPARSE, ctx.params.n)
    br = dft.bit_reverse(SPARSE)
    x = t[:SPARSE][br] + 1j * t[SPARSE:][br]
    u = dft.coeffs_to_slots(_enc(z, ctx, keys, 72), plans["cts_packed"], ctx, keys.evaluation)
    assert u.level == 16 and u.slots == 2 * SPARSE
    _check(0.5 * np.concatenate([x, -1j * x]), _dec(u, ctx, keys), 41.7, 38.4)  # measured 42.7 / 40.4
    c = dft.conj_add(u, ctx, keys.evaluation)
    want = np.concatenate([t[:SPARSE][br], t[SPARSE:][br]])
    _check(want, _dec(c, ctx, keys), 41.0, 38.0)  # measured 42.0 / 40.0
    y = dft.slots_to_coeffs(c, plans["stc_packed"], ctx, keys.evaluation)
    assert y.level == 13 and y.slots == SPARSE
    _check(z, _dec(y, ctx, keys), 37.3, 35.2)  # measured 38.3 / 37.2


def test_sparse_round_trip(env, rng):
    ctx, keys, plans = env
    z = _cplx(rng, SPARSE)
    u = dft.coeffs_to_slots(_enc(z, ctx, keys, 73), plans["cts_sparse"], ctx, keys.evaluation)
    br = dft.bit_reverse(SPARSE)
    t = _coefficients(z, SPARSE, ctx.params.n)
    _check(t[:SPARSE][br] + 1j * t[SPARSE:][br], _dec(u, ctx, keys), 41.6, 38.9)  # measured 42.6 / 40.9
    y = dft.slots_to_coeffs(u, plans["stc_sparse"], ctx, keys.evaluation)
    _check(z, _dec(y, ctx, keys), 38.1, 35.5)  # measured 39.1 / 37.5


def test_bad_input(env, rng):
    ctx, keys, plans = env
    ct = _enc(_cplx(rng, SPARSE), ctx, keys, 74)
    with pytest.raises(ValueError, match="takes ciphertexts packing 2048 slots"):
        dft.coeffs_to_slots(ct, plans["cts"], ctx, keys.evaluation)
    with pytest.raises(TypeError, match="kind 'stc'"):
        dft.slots_to_coeffs(ct, plans["cts_sparse"], ctx, keys.evaluation)
    with pytest.raises(ValueError, match="packed needs"):
        dft.make_cts(ctx, FULL, 18, 3, packed=True)
    with pytest.raises(ValueError, match="go below level 0"):
        dft.make_stc(ctx, SPARSE, 2, 3)
    with pytest.raises(ValueError, match="gives 2 phases, levels is 3"):
        dft.make_cts(ctx, SPARSE, 18, 3, radix_logs=(3, 3))
    with pytest.raises(ValueError, match="exceed N/2"):
        dft.make_stc(ctx, 4096, 7, 3)
