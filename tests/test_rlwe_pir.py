"""Lattice layer (jax_fhe.rlwe: integer gadget over RNS, key switching, RGSW) and the PIR ring
(jax_fhe.pir.ring): checked against Python integers."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import rlwe, rns
from jax_fhe.ops import automorphism_coeff, intt, ntt
from jax_fhe.pir import ring
from jax_fhe.rns import HostRandom, make_context, ntt_primes, to_residues

N = 1024
PRIMES = ntt_primes(29, 3, N, congruent_to=1 << 18)
Q = math.prod(PRIMES)


@pytest.fixture(scope="module")
def ctx():
    return make_context(PRIMES, N)


def _ints(res, primes=PRIMES):
    return rns.crt_centered(np.asarray(res), primes)


def _residues(vals):
    return np.array([[int(v) % q for v in vals] for q in PRIMES], dtype=np.uint32)


@pytest.mark.parametrize("base_log,length", [(18, 5), (9, 10), (23, 4)])
def test_decompose_exact(device, put, ctx, rng, base_log, length):
    g = rlwe.make_gadget(PRIMES, base_log, length)
    vals = [int(v) * (1 << 29) + int(w) for v, w in zip(rng.integers(0, 1 << 62, N), rng.integers(0, 1 << 29, N))]
    vals = [v % Q for v in vals]
    vals[:9] = [0, 1, Q - 1, Q // 2, Q // 2 + 1, Q // 2 - 1, Q - 2, (1 << 86) % Q, 1 << base_log]
    d = np.asarray(jax.jit(lambda x, g, c: rlwe.decompose(x, g, c))(put(_residues(vals)), put(g), put(ctx)))
    assert d.shape == (length, 3, N)
    digits = np.stack([_ints(d[j]) for j in range(length)])            # centered ints [len, N]
    half = 1 << (base_log - 1)
    assert all(-half <= int(x) < half for x in digits.ravel())
    for i, v in enumerate(vals):
        x = sum(int(digits[j, i]) << (base_log * j) for j in range(length))
        assert x % Q == v and abs(x) <= Q // 2 + 1
    back = np.asarray(rlwe.recompose(jnp.asarray(d), g, ctx))
    np.testing.assert_array_equal(back, _residues(vals))
    # the fused path of key switching and external products: the NTT of these digits, lifted
    # to the primes inside the transform (ops.ntt_lift), equals ntt(decompose(x))
    x = put(jnp.stack([_residues(vals), _residues(vals[::-1])]))
    want = np.asarray(ntt(rlwe.decompose(x, put(g), put(ctx)), put(ctx)))
    got = np.asarray(jax.jit(lambda x, g, c: rlwe.decompose_ntt(x, g, c))(x, put(g), put(ctx)))
    np.testing.assert_array_equal(got, want)


def test_make_gadget_rejects(ctx):
    with pytest.raises(ValueError, match="covers"):
        rlwe.make_gadget(PRIMES, 17, 5)                                  # 85 bits < 88
    with pytest.raises(ValueError, match="smallest prime"):
        rlwe.make_gadget(PRIMES, 30, 3)
    with pytest.raises(ValueError, match="distinct"):
        rlwe.make_gadget((PRIMES[0], PRIMES[0]), 18, 5)
    g = rlwe.make_gadget(PRIMES[1:], 18, 4)
    with pytest.raises(ValueError, match="gadget is for primes"):
        rlwe.decompose(jnp.zeros((2, N), jnp.uint32), g, ctx)
    g = rlwe.make_gadget(PRIMES, 18, 5)
    with pytest.raises(ValueError, match="expected uint32"):
        rlwe.decompose(jnp.zeros((2, N), jnp.uint32), g, ctx)


def _setup(ctx, seed):
    rng = HostRandom.insecure_deterministic(seed)
    s = rng.ternary((N,))
    return rng, s, rlwe.secret_ntt(s, ctx)


def test_automorphism_key_switch(device, put, ctx):
    rng, s, s_ntt = _setup(ctx, 1)
    g = rlwe.make_gadget(PRIMES, 18, 5)
    m = rng.ternary((N,)).astype(np.int64) << 60
    m_res = jnp.asarray(to_residues(m, PRIMES))
    ct = rlwe.encrypt_ntt(s_ntt, ntt(m_res, ctx), ctx, rng, 3.2, 6.0)
    gal = N // 2 + 1
    key = rlwe.automorphism_key(s_ntt, gal, g, ctx, rng)
    out = jax.jit(rlwe.automorphism)(put(ct), put(key), put(g), put(ctx))
    ph = _ints(intt(rlwe.phase_ntt(jnp.asarray(out), s_ntt, ctx), ctx))
    want = _ints(automorphism_coeff(m_res, gal, ctx))
    # measured max |noise| 2^25.6 (N = 1024): sum_j d_j e_j with |d| <= 2^17, 5 N terms
    assert ring.noise_log2(ph - want) < 29
    with pytest.raises(ValueError, match="galois"):
        rlwe.automorphism(ct, rlwe.GadgetKey(rows=key.rows), g, ctx)


def test_external_product_and_cmux(device, put, ctx):
    rng, s, s_ntt = _setup(ctx, 2)
    ks = rlwe.make_gadget(PRIMES, 18, 5)
    sel_g = rlwe.make_gadget(PRIMES, 9, 10)
    m0 = rng.ternary((N,)).astype(np.int64) << 60
    m1 = rng.ternary((N,)).astype(np.int64) << 61
    ct0, ct1 = (rlwe.encrypt_ntt(s_ntt, ntt(jnp.asarray(to_residues(m, PRIMES)), ctx), ctx, rng, 3.2, 6.0)
                for m in (m0, m1))
    conv = rlwe.rgsw.encrypt(s_ntt, s_ntt, ks, ctx, rng)
    cmux = jax.jit(lambda sel, a, b, g, c: rlwe.cmux(sel, a, b, g, c))
    for bit in (0, 1):
        one = np.zeros(N, np.int64)
        one[0] = bit
        one_ntt = ntt(jnp.asarray(to_residues(one, PRIMES)), ctx)
        direct = rlwe.rgsw.encrypt(s_ntt, one_ntt, sel_g, ctx, rng)
        # RGSW from its b-rows only, through the RGSW(s) conversion key
        rows_b = rlwe.gadget_rows(s_ntt, one_ntt, sel_g, ctx, rng, 3.2, 6.0)
        converted = rlwe.from_rlwe(rows_b, conv, ks, ctx)
        for sel in (direct, converted):
            out = cmux(put(sel), put(ct0), put(ct1), put(sel_g), put(ctx))
            ph = _ints(intt(rlwe.phase_ntt(jnp.asarray(out), s_ntt, ctx), ctx))
            # measured max 2^40.1 (converted rows, N = 1024): digits ~2^8 x conversion noise
            # ~2^26 x sqrt(20 N); Delta / 2 would be 2^68
            assert ring.noise_log2(ph - (m1 if bit else m0).astype(object)) < 44
    with pytest.raises(ValueError, match="do not match"):
        rlwe.external_product(direct, ct0, ks, ctx)                     # wrong gadget length


def test_ring_mod_switch_and_decrypt(device, put):
    t = ring.make_tables(ring.RING_TOY)
    rng = HostRandom.insecure_deterministic(3)
    key = ring.keygen(t, rng)
    p = ring.RING_TOY
    m = rng.uint64((2, N)) % np.uint64(p.p)
    ct = ring.encrypt_ntt(key, ntt(jnp.asarray(to_residues(m.astype(np.int64) * p.delta % p.q, p.primes)
                                               if False else _scaled(m, p)), t.ctx), t, rng)
    sw = jax.jit(ring.mod_switch)(put(ct), put(t))
    np.testing.assert_array_equal(np.asarray(ring.decrypt_switched(key, sw, t)), m.astype(np.uint32))
    # the switch is round(x q_0 / Q) up to -1 on every word (checked with Python ints)
    x = _ints(intt(ct, t.ctx)) % p.q
    want = (x * p.primes[0] * 2 + p.q) // (2 * p.q)
    diff = (want - np.asarray(sw).astype(object)) % p.primes[0]
    assert set(np.unique(diff).tolist()) <= {0, 1}


def _scaled(m, p):
    vals = m.astype(object) * p.delta
    return np.stack([np.array([[int(v) % q for v in row] for q in p.primes], dtype=np.uint32) for row in vals])


def test_ring_params_checks():
    with pytest.raises(ValueError, match="HE-standard"):
        ring.RingParams(n=1024, primes=ring.RING_N4096.primes)
    with pytest.raises(ValueError, match="= 1 mod p"):
        ring.RingParams(n=4096, primes=ntt_primes(28, 3, 4096))
    assert "INSECURE" in repr(ring.RING_TOY)
    assert ring.RING_N4096.primes == (536608769, 533463041, 531628033)
    assert round(ring.RING_N4096.log_q, 2) == 86.98 and ring.RING_N4096.delta0 == 2047
