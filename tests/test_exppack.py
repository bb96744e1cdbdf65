"""ExpPack: the exact modular GEMM, query expansion and the packing identity."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import lwe
from jax_fhe.ops import ntt
from jax_fhe.pir import exppack, modgemm, ring
from jax_fhe.rns import HostRandom

PRIMES = ring.RING_N4096.primes


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("k", [1280, 7])
def test_mod_matmul_exact(device, put, rng, k, fused):
    """Against Python integers, K = n = 1280 and worst-case residues q - 1; the XLA path and the
    FFI kernel (int8 tensor cores on the GPU)."""
    s, m, c = 3, 4, 5
    lhs = np.stack([rng.integers(0, q, (s, m, k)) for q in PRIMES]).astype(np.uint32)
    rhs = np.stack([rng.integers(0, q, (s, k, c)) for q in PRIMES]).astype(np.uint32)
    for l, q in enumerate(PRIMES):
        lhs[l, 0, 0, :], rhs[l, 0, :, 0] = q - 1, q - 1             # largest possible products
        lhs[l, 0, 1, :], rhs[l, 0, :, 1] = 0, 1
    f = jax.jit(lambda a, b: modgemm.mod_matmul(modgemm.split_planes(a), b, PRIMES, 0, fused=fused))
    out = np.asarray(f(put(lhs), put(rhs)))
    ref = np.stack([(lhs[l].astype(object) @ rhs[l].astype(object)) % q for l, q in enumerate(PRIMES)])
    assert out.dtype == np.uint32 and out.shape == (3, s, m, c)
    np.testing.assert_array_equal(out.astype(object), ref)


@pytest.mark.parametrize("m, k, c", [(17, 36, 70), (40, 96, 33), (3, 4, 2), (130, 64, 8)])
def test_fused_mod_matmul_tiles(device, put, rng, m, k, c):
    """The FFI kernel at shapes that cut its tiles (M not a multiple of 16, C beyond one column
    tile or below one mma column block, K not a multiple of its 32-step) equals the XLA path,
    under jit and vmap; the XLA path is checked against Python integers above."""
    lhs = np.stack([rng.integers(0, q, (2, m, k)) for q in PRIMES], axis=1).astype(np.uint32)
    rhs = np.stack([rng.integers(0, q, (2, k, c)) for q in PRIMES], axis=1).astype(np.uint32)
    planes = put(modgemm.split_planes(jnp.asarray(lhs)))
    r = put(jnp.asarray(rhs))
    ref = np.asarray(jax.jit(lambda a, b: modgemm.mod_matmul(a, b, PRIMES, 1, fused=False))(planes, r))
    out = jax.jit(lambda a, b: modgemm.mod_matmul(a, b, PRIMES, 1, fused=True))(planes, r)
    np.testing.assert_array_equal(np.asarray(out), ref)
    vm = jax.vmap(lambda a, b: modgemm.mod_matmul(a, b, PRIMES, 0, fused=True))(planes, r)
    np.testing.assert_array_equal(np.asarray(vm), ref)


def test_fused_mod_matmul_handler_rejects_bad_moduli():
    """The kernel's contract (moduli in (4 K 2^14, 2^29)) is checked by the CPU handler; the
    Python wrapper rejects such primes before any kernel runs."""
    planes = jnp.zeros((1, 8, 4), jnp.int8)
    with pytest.raises(ValueError, match="below 2"):
        modgemm.mod_matmul(planes, jnp.zeros((1, 4, 2), jnp.uint32), ((1 << 29) + 11,), 0, fused=True)
    call = jax.ffi.ffi_call("jax_fhe_mod_matmul_planes", jax.ShapeDtypeStruct((1, 2, 2), jnp.uint32))
    with pytest.raises(Exception, match="modulus"):
        jax.block_until_ready(call(planes, jnp.zeros((1, 2, 4), jnp.uint32), jnp.array([7], jnp.uint32)))


def test_mod_matmul_rejects():
    planes = jnp.zeros((3, 8, 5), jnp.int8)
    with pytest.raises(ValueError, match="do not"):
        modgemm.mod_matmul(planes, jnp.zeros((3, 6, 2), jnp.uint32), PRIMES, 0)
    with pytest.raises(ValueError, match="too large"):
        modgemm.mod_matmul(jnp.zeros((3, 8, 1 << 14), jnp.int8), jnp.zeros((3, 1 << 14, 2), jnp.uint32), PRIMES, 0)
    with pytest.raises(ValueError, match="primes"):
        modgemm.mod_matmul(planes, jnp.zeros((3, 5, 2), jnp.uint32), PRIMES[:2], 0)


def _expansion(rp, n, seed, batch=2):
    t = ring.make_tables(rp)
    rng = HostRandom.insecure_deterministic(seed)
    key = ring.keygen(t, rng)
    keys = exppack.make_expansion_keys(key, t, exppack.expansion_levels(n), rng)
    s = rng.ternary((batch, n))
    ct = ring.encrypt_ntt(key, ntt(jnp.asarray(exppack.special_message(s, t)), t.ctx), t, rng)
    return t, rng, key, keys, s, ct


def _expand_and_check(put, rp, n, bound_log2):
    t, rng, key, keys, s, ct = _expansion(rp, n, 5)
    out = jax.jit(lambda c, k, tt: exppack.expand(c, k, tt, n))(put(ct), put(keys), put(t))
    assert out.shape == (2, n, 2, rp.limbs, rp.n)
    pick = np.r_[0:4, n // 2:n // 2 + 2, n - 4:n]                   # first, middle, last leaves
    ph = ring.phase_int(key, jnp.asarray(out)[:, pick], t)           # [2, len(pick), N]
    want = np.zeros(ph.shape, dtype=object)
    want[..., 0] = s[:, pick].astype(object) * rp.delta
    noise = ring.noise_log2(ph - want)
    assert noise < bound_log2, noise
    return noise


def test_expand_toy(device, put):
    # measured 2^30.6 (N = 1024, 7 levels); Delta / 2 = 2^68
    _expand_and_check(put, ring.RING_TOY, 100, 34)


def test_expand_full_size(device, put):
    # N = 4096, n = 1280, 11 levels: measured max 2^36.9 over 20 leaves x 4096 coefficients.
    # (VIPIR's bound 2^35.6 omits the factor N of the key-switching sum; notes §3.7.)
    _expand_and_check(put, ring.RING_N4096, 1280, 39)


def test_expand_rejects():
    t, rng, key, keys, s, ct = _expansion(ring.RING_TOY, 8, 6, batch=1)
    with pytest.raises(ValueError, match="at most 8"):
        exppack.expand(ct, keys, t, 9)
    with pytest.raises(ValueError, match="levels"):
        exppack.make_expansion_keys(key, t, 11, rng)


def test_pack_identity(device, put):
    """Dec(pack) equals the LWE phase vector b + A s mod 2^18, exactly, for every row."""
    rp, n, blocks = ring.RING_TOY, 64, 3
    t, rng, key, keys, s, ct = _expansion(rp, n, 7)
    special = exppack.expand(ct, keys, t, n)
    rows = blocks * rp.n
    a = lwe.public_matrix(11, rows, n)                              # the a-parts of rows LWE cts
    m = rng.uint64((2, rows)) % np.uint64(256)
    e = rng.gaussian((2, rows), 3.2, 6.0)
    a_s = np.asarray(a).astype(np.int64) @ s.T.astype(np.int64)       # [rows, B]
    b = ((m.astype(np.int64) << 24) + e - a_s.T) % (1 << 32)
    planes = jax.jit(exppack.hint_planes)(put(a), put(t))
    out = jax.jit(exppack.pack)(planes, put(special), put(jnp.asarray(b.astype(np.uint32))), put(t))
    assert out.shape == (2, blocks, 2, rp.limbs, rp.n)
    # expected plaintext: (round_18(b) + round_18(A) s) mod 2^18, centered-lift as the server does
    r18 = lambda x: ((np.asarray(x).astype(np.int64) + (1 << 13)) >> 14) % (1 << 18)  # noqa: E731
    val = (r18(b) + (r18(a) @ s.T.astype(np.int64)).T) % (1 << 18)     # [B, rows]
    ph = ring.phase_int(key, jnp.asarray(out), t).reshape(2, rows)
    err = (ph - val.astype(object) * rp.delta) % rp.q
    err = np.where(err > rp.q // 2, err - rp.q, err)
    noise = ring.noise_log2(err)
    # measured 2^58.4 (n = 64, N = 1024) and 2^59.8 at n = 1280, N = 4096; Delta / 4 = 2^67
    assert noise < 64, noise
    # and the LWE messages come out of the rounded phases
    np.testing.assert_array_equal(((val + 512) >> 10) % 256, m)
