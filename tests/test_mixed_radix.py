"""ops.mixed_radix_conv (centered conversion from more than 16 source primes, chunked) against
Python integers; ops.mul_shoup; rlwe.plainmod (centered lifts mod t, the t-correction of an
exact division, t-corrected hybrid ModDown and key switching)."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import ops, rlwe, rns
from jax_fhe.rlwe import plainmod

N = 1 << 10


def _residues(values, primes):
    return np.array([[v % q for v in values] for q in primes], dtype=np.uint64).astype(np.uint32)


def _values(rng, big_q, n):
    """n integers uniform in [-Q/2, Q/2), with 0, 1, -1 planted."""
    out = [int.from_bytes(rng.bytes(big_q.bit_length() // 8 + 8), "little") % big_q - big_q // 2
           for _ in range(n)]
    out[:3] = [0, 1, -1]
    return out


@pytest.mark.parametrize("count, bits", [(1, 30), (3, 30), (23, 30), (47, 31), (12, 25)])
def test_crt_centered_float(count, bits, rng):
    """rns.crt_centered_float (Garner in int64, Horner in float64: CKKS decoding's CRT) against
    the exact big-integer CRT: exact for |x| < 2^53 (with 0, +-1 and the centered range's ends),
    within a relative L 2^-52 everywhere else (infinite beyond the float range); a batch axis."""
    primes = rns.ntt_primes(bits, count, N)
    big_q = math.prod(primes)
    small = [0, 1, -1, 2**53 - 1, -(2**53 - 1), 12345678901] + [int(v) for v in rng.integers(-2**52, 2**52, 58)]
    small = [v for v in small if abs(v) <= big_q // 2]
    vals = _values(rng, big_q, 64) + [big_q // 2, -(big_q // 2)]
    res = np.stack([_residues(vals, primes), _residues(small + [0] * (len(vals) - len(small)), primes)])
    got = rns.crt_centered_float(res, primes)
    want = rns.crt_centered(res, primes)
    assert got.shape == (2, len(vals)) and got.dtype == np.float64
    np.testing.assert_array_equal(got[1, :len(small)], np.array(small, dtype=np.float64))
    fin = np.array([abs(v) < 2**1023 for v in want[0]])
    huge = np.array([abs(v) >= 2**1024 for v in want[0]])
    exact = np.array([float(v) if f else 0.0 for v, f in zip(want[0], fin)])
    assert np.all(np.abs(got[0, fin] - exact[fin]) <= np.abs(exact[fin]) * count * 2.0**-52), (got[0], exact)
    assert np.all(np.isinf(got[0, huge])) and np.all(np.sign(got[0, huge]) == [np.sign(v) for v in want[0][huge]])


@pytest.mark.parametrize("lin, bits, chunk", [(5, 30, 16), (16, 30, 16), (17, 30, 16), (37, 25, 16),
                                              (40, 30, 8), (20, 31, 16)])
def test_mixed_radix_conv_is_the_centered_crt(lin, bits, chunk, device, put, rng):
    src = rns.ntt_primes(bits, lin, N)
    dst = rns.ntt_primes(bits, 7, N, exclude=src) + (12289,)
    primes = src + dst
    conv = put(rns.make_mixed_radix_conv(primes, range(lin), range(lin, len(primes)), chunk=chunk))
    assert len(conv.chunks) == -(-lin // chunk)
    big_q = math.prod(src)
    vals = _values(rng, big_q, N)
    lim = big_q // 2 - (big_q >> 18)        # exact inside (Q/2)(1 - 2^-18)
    vals[3], vals[4] = lim, -lim
    x = put(jnp.asarray(_residues(vals, src)))
    out = np.asarray(jax.jit(ops.mixed_radix_conv)(x, conv))
    want = _residues(vals, dst)
    np.testing.assert_array_equal(out, want)
    # vmap == batch, and a batch of two equals the two one by one
    xb = jnp.stack([x, x[:, ::-1]])
    ob = np.asarray(jax.vmap(ops.mixed_radix_conv, in_axes=(0, None))(xb, conv))
    np.testing.assert_array_equal(ob[0], want)
    np.testing.assert_array_equal(ob[1], np.asarray(ops.mixed_radix_conv(x[:, ::-1], conv)))


def test_mixed_radix_conv_near_half_q_is_congruent_and_bounded(device, put):
    """Within 2^-18 of +-Q/2 the result may be the other representative: still = v (mod Q) and
    below (Q/2)(1 + 2^-16) in absolute value."""
    src = rns.ntt_primes(30, 33, N)
    dst = rns.ntt_primes(31, 40, N)       # a target basis large enough to read the integer back
    primes = src + dst
    conv = put(rns.make_mixed_radix_conv(primes, range(len(src)), range(len(src), len(primes))))
    big_q = math.prod(src)
    vals = [big_q // 2 - k for k in range(N // 2)] + [-(big_q // 2) + k for k in range(N // 2)]
    out = np.asarray(ops.mixed_radix_conv(put(jnp.asarray(_residues(vals, src))), conv))
    back = rns.crt_centered(out, dst)
    for v, w in zip(vals, back):
        assert (int(w) - v) % big_q == 0 and abs(int(w)) < big_q // 2 + (big_q >> 16)


def test_mixed_radix_conv_errors():
    src = rns.ntt_primes(30, 3, N)
    conv = rns.make_mixed_radix_conv(src + (12289,), range(3), (3,))
    with pytest.raises(ValueError, match="limbs"):
        ops.mixed_radix_conv(jnp.zeros((4, N), jnp.uint32), conv)
    with pytest.raises(TypeError, match="MixedRadixConv"):
        ops.mixed_radix_conv(jnp.zeros((3, N), jnp.uint32), rns.make_exact_conv(src + (12289,), range(3), (3,)))
    with pytest.raises(ValueError, match="chunk"):
        rns.make_mixed_radix_conv(src, range(2), (2,), chunk=17)
    with pytest.raises(ValueError, match="non-empty"):
        rns.make_mixed_radix_conv(src, (), (2,))


def test_mul_shoup(device, put, rng):
    mods = [12289, 65537, (1 << 31) - 1, 786433]
    w = [int(rng.integers(0, q)) for q in mods]
    consts = put(rns.device_u32([mods, w, [int(v) for v in rns.shoup.shoup(w, mods)]]))
    x = rng.integers(0, 1 << 32, (2, len(mods), N), dtype=np.uint64)
    x[..., :2] = [0, (1 << 32) - 1]
    out = np.asarray(jax.jit(ops.mul_shoup)(put(jnp.asarray(x.astype(np.uint32))), consts))
    want = (x.astype(object) * np.array(w, dtype=object)[:, None]) % np.array(mods, dtype=object)[:, None]
    np.testing.assert_array_equal(out, want.astype(np.uint64))
    with pytest.raises(ValueError, match=r"uint32\[3, 4\]"):
        ops.mul_shoup(jnp.zeros((4, N), jnp.uint32), consts[:2])


def test_lift_centered_and_check_plain_modulus(device, put):
    t = 65537
    moduli = rns.ntt_primes(30, 3, N)
    u = put(jnp.asarray(np.array([0, 1, t // 2, t // 2 + 1, t - 1] + [7] * (N - 5), np.uint32)))
    out = np.asarray(plainmod.lift_centered(u, t, rns.device_u32(moduli)))
    for l, q in enumerate(moduli):
        assert list(out[l, :5]) == [0, 1, t // 2, q - (t // 2), q - 1]
    with pytest.raises(ValueError, match="below every"):
        plainmod.check_plain_modulus((1 << 31) - 1, moduli)
    with pytest.raises(ValueError, match="odd prime"):
        plainmod.check_plain_modulus(65536, moduli)
    with pytest.raises(TypeError, match="int"):
        plainmod.check_plain_modulus(65537.0, moduli)


def _ring():
    q = rns.ntt_primes(30, 4, N)
    p = rns.ntt_primes(31, 2, N)
    return q, p, rns.make_context(q + p, N)


@pytest.mark.parametrize("t", [65537, 12289])
def test_t_corrected_mod_down_keeps_the_phase_mod_t(t, device, put, rng):
    """ModDown with plain_modulus: (y - delta) / P with delta = y mod P and delta = 0 mod t, so
    P y' = y (mod t) coefficient-wise, and |y' - y / P| <= 1/2 + t/2."""
    q, p, ring = _ring()
    rows, special = (0, 1, 2, 3), (4, 5)
    tables = put(rlwe.make_hybrid_tables(q + p, rows, special, alpha=2, plain_modulus=t))
    plain = put(rlwe.make_hybrid_tables(q + p, rows, special, alpha=2))
    ring = put(ring)
    big_q, big_p = math.prod(q), math.prod(p)
    vals = [int.from_bytes(rng.bytes(40), "little") % (big_q * big_p) for _ in range(N)]
    y = put(jnp.asarray(_residues(vals, q + p)))
    y_ntt = ops.ntt(y, ring)
    out = rns.crt_centered(np.asarray(ops.intt(rlwe.mod_down(y_ntt, ring, tables), ring, rows)), q)
    ref = rns.crt_centered(np.asarray(ops.intt(rlwe.mod_down(y_ntt, ring, plain), ring, rows)), q)
    for v, w, r in zip(vals, out, ref):
        v = v - big_q * big_p if v > big_q * big_p // 2 else v
        assert (int(w) * big_p - v) % t == 0               # the phase mod t is kept
        assert abs(int(w) * big_p - v) <= big_p * (t + 1) // 2 + 1
        assert abs(int(r) * big_p - v) <= big_p // 2 + 1   # plain ModDown: plain rounding
    assert tables.plain_modulus == t and plain.plain_modulus is None and "t=" in repr(tables)


def test_t_corrected_key_switch(device, put):
    """A BGV-style key switch: keys with noise t e and t-corrected tables switch x s' into a
    ciphertext whose phase is x s' + t (small); the fused path equals the three stages."""
    t = 65537
    q, p, ring = _ring()
    rows, special = (0, 1, 2, 3), (4, 5)
    primes = q + p
    tables = put(rlwe.keyswitch.make_tables("hybrid", primes, rows, special, 2, plain_modulus=t))
    ring = put(ring)
    hr = rns.HostRandom.insecure_deterministic(3)
    s_old, s_new = (rlwe.secret_ntt(rlwe.sample_secret(N, hr), ring) for _ in range(2))
    key = put(rlwe.keyswitch.gen_key("hybrid", ring, s_old, s_new, num_q=4, alpha=2, sigma=3.2, rng=hr,
                                     error_factor=t))
    x = put(jnp.asarray(rlwe.uniform((), ring, rows, hr)))
    u = jax.jit(rlwe.keyswitch.key_switch)(x, key, ring, tables)
    staged = rlwe.mod_down(rlwe.key_inner_product(rlwe.mod_up(x, ring, tables), key, ring, tables), ring, tables)
    np.testing.assert_array_equal(np.asarray(u), np.asarray(staged))
    ph = rlwe.phase(u, s_new[:4], ring, rows)
    want = ops.mul_mod(x, s_old[:4], ring, rows)
    err = rns.crt_centered(np.asarray(ops.intt(ops.sub_mod(ph, want, ring, rows), ring, rows)), q)
    assert all(int(v) % t == 0 for v in err)
    assert max(abs(int(v)) for v in err) < t * N        # t times ModDown's rounding (1/2 + t/2)(1 + |s|_1)/t


def test_error_factor_checks():
    _, _, ring = _ring()
    with pytest.raises(TypeError, match="error_factor"):
        rlwe.noise_ntt((N,), ring, (0,), rns.HostRandom.insecure_deterministic(0), 3.2, error_factor=2.0)
    with pytest.raises(ValueError, match="error_factor"):
        rlwe.noise_ntt((N,), ring, (0,), rns.HostRandom.insecure_deterministic(0), 3.2, error_factor=0)
    with pytest.raises(TypeError, match="plain_modulus only"):
        rlwe.keyswitch.make_tables("hybrid", ring.primes, (0, 1), (4,), 1, plain_modulus=65537, other=1)
