"""Regev LWE over Z_{2^k}: keys, encryption, decryption, modulus switching, noise measurement.

Convention (VIPIR App. A): a ciphertext of m in Z_p is (a, b) with
    b = Delta * m + e - <a, s>   (mod q),      phase = b + <a, s> = Delta * m + e,
and decryption rounds phase / Delta. Fresh ciphertexts live mod q = 2^32, so every operation is
plain uint32 arithmetic whose wraparound *is* the reduction mod q. After ``mod_switch`` to
q' = 2^k (k < 32) the words still are uint32 but hold values in [0, 2^k); we compute mod 2^32
and mask, which is exact because 2^k divides 2^32.

Sampling (keygen/encrypt) runs on the host with :class:`HostRandom`; phase/decrypt/mod_switch/
noise are pure jnp functions that jit and vmap.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..rns.pytree import pytree_dataclass, static_field
from .params import LWEParams
from .sampling import HostRandom

_U32 = jnp.uint32


@pytree_dataclass
class LWESecretKey:
    """Ternary secret. Leaf ``s``: int8[n] with entries in {-1, 0, 1}. Static: ``params``."""

    s: jax.Array
    params: LWEParams = static_field()

    def __repr__(self) -> str:  # never print the secret
        return f"LWESecretKey({self.params!r})"


@pytree_dataclass
class LWECiphertext:
    """A batch of LWE ciphertexts mod 2^log_q.

    Leaves: ``a``: uint32[..., n], ``b``: uint32[...]. Static: ``params``, ``log_q`` (32 when
    fresh, smaller after :func:`mod_switch`).
    """

    a: jax.Array
    b: jax.Array
    params: LWEParams = static_field()
    log_q: int = static_field(default=32)

    @property
    def delta(self) -> int:
        """Plaintext scale at the current modulus: 2^(log_q - log_p)."""
        return 1 << (self.log_q - self.params.log_p)


def keygen(params: LWEParams, rng: HostRandom | None = None) -> LWESecretKey:
    """Sample a uniform ternary secret int8[n] (from ``os.urandom`` unless ``rng`` says otherwise)."""
    _check_params(params, "keygen")
    rng = _check_rng(rng, "keygen")
    return LWESecretKey(s=jnp.asarray(rng.ternary((params.n,))), params=params)


def encrypt(sk: LWESecretKey, m, rng: HostRandom | None = None, *, a=None) -> LWECiphertext:
    """Encrypt plaintexts ``m`` (integers in [0, p), shape [...]) under ``sk``, mod 2^32.

    ``a`` (uint32[..., n], e.g. rows of a public matrix) is sampled uniformly when omitted.
    Noise is the truncated discrete Gaussian of ``sk.params``. Returns ciphertexts with
    ``a``: uint32[..., n] and ``b``: uint32[...].
    """
    _check_key(sk, "encrypt")
    params = sk.params
    rng = _check_rng(rng, "encrypt")
    m = np.asarray(m)
    if not np.issubdtype(m.dtype, np.integer):
        raise TypeError(f"encrypt: plaintexts must be integers in [0, {params.p}), got dtype {m.dtype}")
    if m.size and (m.min() < 0 or m.max() >= params.p):
        raise ValueError(f"encrypt: plaintexts must lie in [0, p={params.p}), got range "
                         f"[{m.min()}, {m.max()}]")
    if a is None:
        key = jax.random.key(rng.seed64() >> 1)
        a = jax.random.bits(key, m.shape + (params.n,), dtype=_U32)
    else:
        a = _as_u32(a, "encrypt: a")
        if a.shape != m.shape + (params.n,):
            raise ValueError(f"encrypt: a must have shape {m.shape + (params.n,)} (plaintext shape + (n,)), "
                             f"got {a.shape}")
    e = jnp.asarray(rng.gaussian(m.shape, params.sigma, params.tail))
    b = (jnp.asarray(m.astype(np.uint32)) * _U32(params.delta) + lax.bitcast_convert_type(e, _U32)
         - inner_product(a, sk.s))
    return LWECiphertext(a=a, b=b, params=params)


def inner_product(a: jax.Array, s: jax.Array) -> jax.Array:
    """<a, s> mod 2^32 for a: uint32[..., n] and a ternary/int8 s: int8[n] -> uint32[...]."""
    s32 = lax.bitcast_convert_type(s.astype(jnp.int32), _U32)  # -1 -> 2^32 - 1: exact mod 2^32
    return jnp.sum(a * s32, axis=-1, dtype=_U32)


def phase(sk: LWESecretKey, ct: LWECiphertext) -> jax.Array:
    """b + <a, s> mod 2^log_q as uint32[...] in [0, 2^log_q) (= Delta * m + e)."""
    _check_pair(sk, ct, "phase")
    return _mask(ct.b + inner_product(ct.a, sk.s), ct.log_q)


def decrypt(sk: LWESecretKey, ct: LWECiphertext) -> jax.Array:
    """Round phase / Delta: uint32[...] plaintexts in [0, p). Correct while |e| < Delta / 2."""
    ph = phase(sk, ct)
    shift = ct.log_q - ct.params.log_p
    # Adding Delta/2 then dropping the low bits rounds; a carry out of bit log_q wraps to 0,
    # which is the right answer mod p.
    return _mask(ph + _U32(1 << (shift - 1)), ct.log_q) >> shift


def noise(sk: LWESecretKey, ct: LWECiphertext, m) -> jax.Array:
    """Centered noise phase - Delta * m as int32[...] (in [-2^(log_q-1), 2^(log_q-1)))."""
    ph = phase(sk, ct)
    m = m.astype(_U32) if isinstance(m, jax.Array) else jnp.asarray(np.asarray(m).astype(np.uint32))
    return centered(ph - m * _U32(ct.delta), ct.log_q)


def noise_magnitude(sk: LWESecretKey, ct: LWECiphertext, m) -> jax.Array:
    """|phase - Delta * m| with the difference centered mod 2^log_q, as uint32[...].

    Decryption is correct while this is below Delta / 2 (``ct.delta // 2``).
    """
    v = noise(sk, ct, m)
    u = lax.bitcast_convert_type(v, _U32)
    return jnp.where(v < 0, _U32(0) - u, u)  # 0 - u in uint32 is exact even for v = -2^31


def centered(x: jax.Array, log_q: int) -> jax.Array:
    """The representative of x mod 2^log_q in [-2^(log_q-1), 2^(log_q-1)), as int32[...]."""
    up = 32 - int(log_q)
    # Shift the sign bit of the log_q-bit value into bit 31, then shift back arithmetically.
    return lax.shift_right_arithmetic(lax.bitcast_convert_type(x.astype(_U32) << up, jnp.int32),
                                      jnp.int32(up))


def mod_switch(ct: LWECiphertext, log_q_new: int) -> LWECiphertext:
    """Switch ciphertexts from 2^log_q to 2^log_q_new by rounding every word.

    x -> round(x * 2^log_q_new / 2^log_q) mod 2^log_q_new. The new noise is
    e / 2^shift + r_b + sum_i r_i s_i with |r| <= 1/2 (in units of the new modulus): standard
    deviation about sqrt((1 + 2n/3) / 12) (8.4 for n = 1280), worst case (n + 1) / 2.
    Needs log_p < log_q_new < ct.log_q.
    """
    if not isinstance(ct, LWECiphertext):
        raise TypeError(f"mod_switch: expected an LWECiphertext, got {type(ct).__name__}")
    log_q_new = int(log_q_new)
    if not ct.params.log_p < log_q_new < ct.log_q:
        raise ValueError(f"mod_switch: target 2^{log_q_new} must satisfy p = 2^{ct.params.log_p} "
                         f"< target < current modulus 2^{ct.log_q}")
    shift = ct.log_q - log_q_new

    def rnd(x):
        return _mask((x + _U32(1 << (shift - 1))) >> shift, log_q_new)

    return LWECiphertext(a=rnd(ct.a), b=rnd(ct.b), params=ct.params, log_q=log_q_new)


def _mask(x, log_q):
    return x if log_q == 32 else x & _U32((1 << log_q) - 1)


def _as_u32(x, what):
    dtype = getattr(x, "dtype", None)
    if dtype is None or np.dtype(dtype) != np.uint32:
        raise TypeError(f"{what}: expected a uint32 array, got {getattr(dtype, 'name', type(x).__name__)}")
    return jnp.asarray(x)


def _check_params(params, what):
    if not isinstance(params, LWEParams):
        raise TypeError(f"{what}: expected LWEParams (e.g. jax_fhe.lwe.LWE_N1280), got {type(params).__name__}")


def _check_rng(rng, what):
    if rng is None:
        return HostRandom()
    if not isinstance(rng, HostRandom):
        raise TypeError(f"{what}: rng must be a HostRandom or None (secure default), got {type(rng).__name__}")
    return rng


def _check_key(sk, what):
    if not isinstance(sk, LWESecretKey):
        raise TypeError(f"{what}: expected an LWESecretKey, got {type(sk).__name__}")


def _check_pair(sk, ct, what):
    _check_key(sk, what)
    if not isinstance(ct, LWECiphertext):
        raise TypeError(f"{what}: expected an LWECiphertext, got {type(ct).__name__}")
    if sk.params != ct.params:
        raise ValueError(f"{what}: key is for {sk.params!r} but the ciphertext is for {ct.params!r}")
    if ct.a.shape[-1:] != (sk.params.n,) or ct.a.shape[:-1] != ct.b.shape:
        raise ValueError(f"{what}: ciphertext shapes a={ct.a.shape}, b={ct.b.shape} do not match "
                         f"a: [..., n={sk.params.n}], b: [...]")
