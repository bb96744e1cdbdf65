"""BGV encryption (public or secret key) and decryption.

A plaintext m (coefficients mod t) is encrypted at a level as [m]_t + t e: the centered lift
onto the level's primes, with encryption noise t e (the keys' and the encryption's errors are
multiplied by t, ``error_factor``). Public-key encryption works in QP and divides by P with the
t-correction (:func:`jax_fhe.rlwe.encrypt_pk` with the level's t-corrected tables), which keeps
the phase mod t. Decryption: [x]_Q converted exactly to t (:func:`jax_fhe.ops.mixed_radix_conv`)
times factor^-1 mod t; exact while |[x]_Q| < (Q/2)(1 - 2^-18), i.e. while the noise budget is
positive. Jittable.
"""
from __future__ import annotations

import jax

from .. import ops
from ..bfv.keys import PublicKey, SecretKey
from ..bfv.types import Plaintext, check_data, check_plaintext
from ..ops import take_static
from ..rlwe import encryption as rlwe_enc
from ..rlwe.plainmod import const_mod_t, lift_centered, mul_const_t
from .context import BGVContext, check_context
from .types import Ciphertext


def level_moduli(ctx: BGVContext, level: int) -> jax.Array:
    """uint32[L_level]: the primes of ``level``."""
    return take_static(ctx.ring.moduli, ctx.params.rows(level), 0)


def lifted_message(m, ctx: BGVContext, level: int, factor: int = 1) -> jax.Array:
    """[factor m]_t on the primes of ``level``, NTT domain: uint32[..., L, N] for coefficients m:
    uint32[..., N] in [0, t)."""
    t = ctx.params.plain_modulus
    if factor % t != 1:
        m = mul_const_t(m, const_mod_t(factor, t))
    rows = ctx.params.rows(level)
    return ops.ntt(lift_centered(m, t, level_moduli(ctx, level)), ctx.ring, rows)


_lifted_message = jax.jit(lifted_message, static_argnames=("level", "factor"))   # one dispatch


def encrypt(pt: Plaintext, ctx: BGVContext, key, rng=None, *, level: int | None = None) -> Ciphertext:
    """Encrypt a plaintext (any batch shape) at ``level`` (default: the top) under a
    :class:`PublicKey` or :class:`SecretKey`; factor 1. ``rng`` as in :func:`jax_fhe.bfv.encrypt`
    (a HostRandom outside ``jax.jit``, or a fresh uint32[8] device key per call: jittable)."""
    ctx = check_context(ctx, "encrypt")
    p = ctx.params
    check_plaintext(pt, p, "encrypt")
    if getattr(key, "params", None) != p:
        raise ValueError(f"encrypt: the key must be for {p.name!r}")
    level = p.max_level if level is None else p.check_level(level)
    rows = p.rows(level)
    m = _lifted_message(pt.data, ctx, level)
    t = p.plain_modulus
    if isinstance(key, PublicKey):
        data = rlwe_enc.encrypt_pk(m, key.data, ctx.ring, rows, rng, p.sigma, tables=ctx.keyswitch_tables(level),
                                   error_factor=t)
    elif isinstance(key, SecretKey):
        data = rlwe_enc.encrypt_sk(m, take_static(key.s, rows, -2, max_runs=1), ctx.ring, rows, rng, p.sigma,
                                   error_factor=t)
    else:
        raise TypeError(f"encrypt: key must be a PublicKey or SecretKey, got {type(key).__name__}")
    return Ciphertext(data=data, level=level, factor=1, params=p)


def check_ct(ct, ctx: BGVContext, what: str, *, any_degree: bool = False) -> Ciphertext:
    """Raise unless ``ct`` is a BGV Ciphertext of the context's set with data of its level
    (degree 1, or 1-2 with ``any_degree``) in the NTT domain."""
    if not isinstance(ct, Ciphertext):
        raise TypeError(f"{what}: expected a bgv.Ciphertext, got {type(ct).__name__}")
    if ct.params != ctx.params:
        raise ValueError(f"{what}: ciphertext is for {ct.params.name!r}, context for {ctx.params.name!r}")
    if not ct.is_ntt:
        raise ValueError(f"{what}: the ciphertext is in the coefficient domain; BGV evaluates in the NTT domain")
    ct.params.check_level(ct.level)
    if not any_degree and getattr(ct.data, "ndim", 0) >= 3 and ct.data.shape[-3] == 3:
        raise ValueError(f"{what}: the ciphertext has degree 2 (mul(..., relinearize=False)); relinearize it first")
    check_data(ct.data, ct.params, len(ct.params.rows(ct.level)), f"{what} (level {ct.level})",
               any_degree=any_degree)
    return ct


def phase_coeffs(ct: Ciphertext, ctx: BGVContext, sk: SecretKey) -> jax.Array:
    """The phase c0 + c1 s (+ c2 s^2) in the coefficient domain: uint32[..., L, N]."""
    rows = ctx.params.rows(ct.level)
    x = rlwe_enc.phase(ct.data, take_static(sk.s, rows, -2, max_runs=1), ctx.ring, rows)
    return ops.intt(x, ctx.ring, rows)


def _check_sk(sk, ctx, what):
    if not isinstance(sk, SecretKey):
        raise TypeError(f"{what}: expected a SecretKey, got {type(sk).__name__}")
    if sk.params != ctx.params:
        raise ValueError(f"{what}: secret key is for {sk.params.name!r}, context for {ctx.params.name!r}")


def decrypt(ct: Ciphertext, ctx: BGVContext, sk: SecretKey) -> Plaintext:
    """m = factor^-1 [x]_t for the phase x (any degree): a Plaintext. Jittable."""
    ctx = check_context(ctx, "decrypt")
    check_ct(ct, ctx, "decrypt", any_degree=True)
    _check_sk(sk, ctx, "decrypt")
    t = ctx.params.plain_modulus
    v = ops.mixed_radix_conv(phase_coeffs(ct, ctx, sk), ctx.to_t_conv(ct.level))[..., 0, :]
    return Plaintext(data=mul_const_t(v, const_mod_t(pow(ct.factor, -1, t), t)), params=ctx.params)


def noise_coeffs(ct: Ciphertext, ctx: BGVContext, sk: SecretKey) -> jax.Array:
    """The phase's residues (coefficient domain, uint32[..., L, N]); its centered value is the
    noise E = f m + t e (:func:`jax_fhe.bgv.noise_budget`). Jittable."""
    ctx = check_context(ctx, "noise")
    check_ct(ct, ctx, "noise", any_degree=True)
    _check_sk(sk, ctx, "noise")
    return phase_coeffs(ct, ctx, sk)
