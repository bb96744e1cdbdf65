"""LWE over Z_{2^32}: parameters, sampling, encryption round trips, modulus switching, noise."""
import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import lwe

P = lwe.LWE_N1280


@pytest.fixture
def rng():
    return lwe.HostRandom.insecure_deterministic(2024)


def all_messages(params, copies=4):
    """Every plaintext, including 0 and p - 1, several times."""
    return np.tile(np.arange(params.p, dtype=np.uint32), copies)


# ---------------------------------------------------------------- parameters


def test_presets():
    assert (P.n, P.q, P.p, P.delta, P.sigma, P.noise_max) == (1280, 2**32, 2**8, 2**24, 3.2, 19)
    assert not P.insecure and "INSECURE" not in repr(P)
    assert lwe.LWE_TOY.insecure and "INSECURE" in repr(lwe.LWE_TOY)
    assert hash(P) == hash(dataclasses.replace(P))  # usable as static pytree metadata


def test_params_validation():
    with pytest.raises(ValueError, match="insecure=True"):
        lwe.LWEParams(n=512)
    with pytest.raises(ValueError, match="insecure=True"):
        lwe.LWEParams(n=1280, sigma=1.0)
    assert lwe.LWEParams(n=512, insecure=True).insecure
    with pytest.raises(ValueError, match="log_p"):
        lwe.LWEParams(n=1280, log_p=0)
    with pytest.raises(ValueError, match="Delta/2"):
        lwe.LWEParams(n=1280, log_p=16, sigma=6000.0)
    with pytest.raises(ValueError, match="positive"):
        lwe.LWEParams(n=0, insecure=True)


# ---------------------------------------------------------------- sampling


def test_ternary_secret_is_uniform(rng):
    t = rng.ternary((60000,))
    assert t.dtype == np.int8 and set(np.unique(t)) == {-1, 0, 1}
    counts = np.bincount(t + 1, minlength=3)
    assert np.all(np.abs(counts - 20000) < 6 * math.sqrt(60000 * (1 / 3) * (2 / 3)))


def test_gaussian_noise_statistics(rng):
    e = rng.gaussian((200000,), 3.2, 6.0)
    assert e.dtype == np.int32
    assert np.abs(e).max() <= 19                      # truncated at floor(6 sigma)
    assert abs(e.mean()) < 0.05                       # 6 standard errors: 6 * 3.2 / sqrt(2e5)
    assert abs(e.std() - 3.2) < 0.03                  # discrete Gaussian std ~ sigma for sigma = 3.2
    # The histogram follows exp(-k^2 / (2 sigma^2)): compare the k = 0 and k = 3 cells.
    ratio = np.sum(e == 3) / np.sum(e == 0)
    assert abs(ratio - math.exp(-9 / (2 * 3.2**2))) < 0.03


def test_deterministic_mode_is_reproducible_and_default_is_fresh():
    a = lwe.HostRandom.insecure_deterministic(7)
    b = lwe.HostRandom.insecure_deterministic(7)
    np.testing.assert_array_equal(a.ternary((100,)), b.ternary((100,)))
    np.testing.assert_array_equal(a.gaussian((100,), 3.2, 6.0), b.gaussian((100,), 3.2, 6.0))
    assert "INSECURE" in repr(a) and not a.secure
    assert lwe.HostRandom().secure
    assert lwe.HostRandom().bytes(32) != lwe.HostRandom().bytes(32)
    k1, k2 = lwe.keygen(P), lwe.keygen(P)
    assert not np.array_equal(np.asarray(k1.s), np.asarray(k2.s))
    with pytest.raises(TypeError, match="seed must be an int"):
        lwe.HostRandom.insecure_deterministic("seed")


def test_public_matrix_is_deterministic_and_seed_dependent():
    a = lwe.public_matrix(123, 5, 7)
    assert a.dtype == jnp.uint32 and a.shape == (5, 7)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(lwe.public_matrix(123, 5, 7)))
    assert not np.array_equal(np.asarray(a), np.asarray(lwe.public_matrix(124, 5, 7)))
    big = np.asarray(lwe.public_matrix(2**64 - 1, 256, 256))
    assert big.max() > 2**31 and big.min() < 2**31 and len(np.unique(big)) > 65000
    with pytest.raises(ValueError, match="2\\^64"):
        lwe.public_matrix(2**64, 2, 2)
    with pytest.raises(TypeError):
        lwe.public_matrix(1.5, 2, 2)


# ---------------------------------------------------------------- encryption


@pytest.mark.parametrize("params", [lwe.LWE_N1280, lwe.LWE_TOY], ids=["n1280", "toy"])
def test_encrypt_decrypt_round_trip_with_noise_bound(params, rng):
    sk = lwe.keygen(params, rng)
    m = all_messages(params)
    ct = lwe.encrypt(sk, m, rng)
    assert ct.a.shape == (m.size, params.n) and ct.b.shape == (m.size,) and ct.b.dtype == jnp.uint32
    np.testing.assert_array_equal(np.asarray(lwe.decrypt(sk, ct)), m)
    mag = np.asarray(lwe.noise_magnitude(sk, ct, m))
    # Fresh noise is the sampled e itself: at most floor(6 sigma) = 19, more than 2^18 times
    # below the decryption bound Delta / 2 = 2^23.
    assert mag.max() <= params.noise_max < (ct.delta // 2) >> 18
    assert mag.max() >= 5  # the noise is really there (P[max of 1024 draws < 5] is negligible)
    # noise() is the signed version of noise_magnitude()
    np.testing.assert_array_equal(np.abs(np.asarray(lwe.noise(sk, ct, m))), mag)


def test_encrypt_under_given_a_and_multi_dim_batch(rng):
    sk = lwe.keygen(P, rng)
    m = np.arange(24, dtype=np.int64).reshape(2, 3, 4) * 10
    a = lwe.public_matrix(5, 24, P.n).reshape(2, 3, 4, P.n)
    ct = lwe.encrypt(sk, m, rng, a=a)
    np.testing.assert_array_equal(np.asarray(ct.a), np.asarray(a))
    np.testing.assert_array_equal(np.asarray(lwe.decrypt(sk, ct)), m)


def test_wrong_key_does_not_decrypt(rng):
    sk, other = lwe.keygen(P, rng), lwe.keygen(P, rng)
    m = all_messages(P, 1)
    ct = lwe.encrypt(sk, m, rng)
    assert np.mean(np.asarray(lwe.decrypt(other, ct)) == m) < 0.05


def test_phase_is_linear(rng):
    # (ct1 + ct2) and 3 * ct1 decrypt to m1 + m2 and 3 m1 mod p (component-wise ops).
    sk = lwe.keygen(P, rng)
    m1, m2 = all_messages(P, 1), all_messages(P, 1)[::-1].copy()
    c1, c2 = lwe.encrypt(sk, m1, rng), lwe.encrypt(sk, m2, rng)
    s = lwe.LWECiphertext(a=c1.a + c2.a, b=c1.b + c2.b, params=P)
    t = lwe.LWECiphertext(a=c1.a * jnp.uint32(3), b=c1.b * jnp.uint32(3), params=P)
    np.testing.assert_array_equal(np.asarray(lwe.decrypt(sk, s)), (m1 + m2) % P.p)
    np.testing.assert_array_equal(np.asarray(lwe.decrypt(sk, t)), (3 * m1) % P.p)


# ---------------------------------------------------------------- modulus switching


def test_mod_switch_to_2_18_round_trip_and_noise(rng):
    sk = lwe.keygen(P, rng)
    m = all_messages(P, 8)                            # 2048 ciphertexts
    ct = lwe.mod_switch(lwe.encrypt(sk, m, rng), 18)
    assert ct.log_q == 18 and ct.delta == 2**10
    assert int(jnp.max(ct.a)) < 2**18 and int(jnp.max(ct.b)) < 2**18
    np.testing.assert_array_equal(np.asarray(lwe.decrypt(sk, ct)), m)
    mag = np.asarray(lwe.noise_magnitude(sk, ct, m))
    # Rounding noise r_b + sum_i r_i s_i (|r| <= 1/2, in units of 2^18): std about
    # sqrt((1 + 2n/3) / 12) = 8.4; over 2048 samples the max is ~ 4 std = 34. The paper's design
    # target is Delta'/4 = 256 (Hoeffding: failure < 2^-146), the hard limit Delta'/2 = 512. We
    # assert the target with a further 2x margin: max < 128.
    assert mag.max() < ct.delta // 8
    std = float(np.std(np.asarray(lwe.noise(sk, ct, m)).astype(np.float64)))
    expected = math.sqrt((1 + np.sum(np.asarray(sk.s) != 0)) / 12)
    assert 0.85 * expected < std < 1.15 * expected   # the noise really is rounding noise


def test_mod_switch_rounds_and_wraps():
    # x -> round(x / 2^14) mod 2^18, halves rounding up; words within 2^13 of 2^32 round to
    # 2^18, i.e. to 0 mod 2^18.
    words = np.array([0, 0x1FFF, 0x2000, 0x3FFF, 0x6000, 0xFFFFDFFF, 0xFFFFE000, 0xFFFFFFFF], np.uint32)
    want = ((words.astype(np.int64) + 2**13) >> 14) % 2**18
    ct = lwe.LWECiphertext(a=jnp.tile(jnp.asarray(words)[:, None], (1, P.n)), b=jnp.asarray(words), params=P)
    out = lwe.mod_switch(ct, 18)
    np.testing.assert_array_equal(np.asarray(out.b), want)
    np.testing.assert_array_equal(np.asarray(out.a[:, 0]), want)
    assert list(want[-3:]) == [2**18 - 1, 0, 0]


def test_jit_equals_eager(rng):
    sk = lwe.keygen(P, rng)
    m = all_messages(P, 1)
    ct = lwe.encrypt(sk, m, rng)

    def pipeline(sk, ct):
        small = lwe.mod_switch(ct, 18)
        return lwe.decrypt(sk, small), lwe.noise_magnitude(sk, small, jnp.asarray(m))

    jitted = jax.jit(pipeline)(sk, ct)
    with jax.disable_jit():
        eager = pipeline(sk, ct)
    for x, y in zip(jitted, eager):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    np.testing.assert_array_equal(np.asarray(jitted[0]), m)


def test_centered():
    x = jnp.array([0, 1, 2**17 - 1, 2**17, 2**18 - 1], jnp.uint32)
    np.testing.assert_array_equal(np.asarray(lwe.centered(x, 18)), [0, 1, 2**17 - 1, -2**17, -1])
    y = jnp.array([0, 2**31 - 1, 2**31, 2**32 - 1], jnp.uint32)
    np.testing.assert_array_equal(np.asarray(lwe.centered(y, 32)), [0, 2**31 - 1, -2**31, -1])


# ---------------------------------------------------------------- bad inputs


def test_bad_inputs_raise(rng):
    sk = lwe.keygen(P, rng)
    toy = lwe.keygen(lwe.LWE_TOY, rng)
    ct = lwe.encrypt(sk, [1, 2], rng)
    with pytest.raises(ValueError, match=r"\[0, p=256\)"):
        lwe.encrypt(sk, [256], rng)
    with pytest.raises(ValueError, match=r"\[0, p=256\)"):
        lwe.encrypt(sk, [-1], rng)
    with pytest.raises(TypeError, match="integers"):
        lwe.encrypt(sk, [1.5], rng)
    with pytest.raises(ValueError, match="shape"):
        lwe.encrypt(sk, [1, 2], rng, a=jnp.zeros((2, 5), jnp.uint32))
    with pytest.raises(TypeError, match="uint32"):
        lwe.encrypt(sk, [1, 2], rng, a=jnp.zeros((2, P.n), jnp.int32))
    with pytest.raises(ValueError, match="key is for"):
        lwe.decrypt(toy, ct)
    with pytest.raises(TypeError, match="LWECiphertext"):
        lwe.decrypt(sk, ct.b)
    with pytest.raises(TypeError, match="LWEParams"):
        lwe.keygen(1280)
    with pytest.raises(TypeError, match="HostRandom"):
        lwe.keygen(P, rng=42)
    with pytest.raises(ValueError, match="target"):
        lwe.mod_switch(ct, 32)
    with pytest.raises(ValueError, match="target"):
        lwe.mod_switch(ct, 8)
    with pytest.raises(ValueError, match="target"):
        lwe.mod_switch(lwe.mod_switch(ct, 18), 20)
    bad = lwe.LWECiphertext(a=ct.a[:, :10], b=ct.b, params=P)
    with pytest.raises(ValueError, match="shapes"):
        lwe.decrypt(sk, bad)
