"""BFV encryption (public or secret key) and decryption.

A plaintext m (coefficients mod t) is encrypted as Delta(m) + e with Delta(m) = round(Q m / t),
computed without big integers as round(Q m / t) = (Q m - [r m]_t) / t = -[r m]_t t^-1 (mod q_i),
r = Q mod t. Then t x = Q m - [r m]_t + t e: the noise E = [t x]_Q starts at t e - [r m]_t
(|[r m]_t| <= t/2), with no r m term (which Delta = floor(Q/t) would leave). Public-key
encryption works in QP and divides by P (:func:`jax_fhe.rlwe.encrypt_pk`), so only ModDown's
rounding (eps0 + eps1 s) remains of its noise.

Decryption computes m = round(t x / Q) mod t as -[t x]_Q Q^-1 (mod t): [t x]_Q is converted
from Q to t exactly (:func:`jax_fhe.ops.mixed_radix_conv`), all in uint32, jittable. It is exact
while the noise budget is positive (|[t x]_Q| < Q/2 (1 - 2^-18)).
"""
from __future__ import annotations

import jax

from .. import ops
from ..ops import take_static
from ..rlwe import encryption as rlwe_enc
from ..rlwe.plainmod import lift_centered, mul_const_t
from .context import BFVContext, check_context
from .keys import PublicKey, SecretKey
from .types import Ciphertext, Plaintext, check_data, check_plaintext


def scaled_message(m, ctx: BFVContext) -> jax.Array:
    """round(Q m / t) on the q primes, NTT domain: uint32[..., L, N] for coefficients m:
    uint32[..., N] in [0, t)."""
    c = ctx.codec
    rows = ctx.q_rows
    rm = lift_centered(mul_const_t(m, c.r_mod_t), ctx.params.plain_modulus, c.moduli)   # [r m]_t
    return ops.ntt(ops.mul_limb_consts(rm, c.neg_t_inv, ctx.ring, rows), ctx.ring, rows)


_scaled_message = jax.jit(scaled_message)   # one dispatch, not one per operation


def lifted_message(m, ctx: BFVContext) -> jax.Array:
    """The centered lift [m]_t on the q primes, NTT domain: uint32[..., L, N]."""
    lifted = lift_centered(m, ctx.params.plain_modulus, ctx.codec.moduli)
    return ops.ntt(lifted, ctx.ring, ctx.q_rows)


def encrypt(pt: Plaintext, ctx: BFVContext, key, rng=None) -> Ciphertext:
    """Encrypt a plaintext (any batch shape) under a :class:`PublicKey` or :class:`SecretKey`.
    ``rng``: HostRandom (None: os.urandom): each call draws a fresh key on the host and the device
    samples the noise from it (outside ``jax.jit``); or that key itself, uint32[8]
    (``HostRandom().device_key()``, a fresh one per call): then jittable."""
    ctx = check_context(ctx, "encrypt")
    p = ctx.params
    check_plaintext(pt, p, "encrypt")
    if getattr(key, "params", None) != p:
        raise ValueError(f"encrypt: the key must be for {p.name!r}")
    rows = ctx.q_rows
    m = _scaled_message(pt.data, ctx)
    if isinstance(key, PublicKey):
        data = rlwe_enc.encrypt_pk(m, key.data, ctx.ring, rows, rng, p.sigma, tables=ctx.keyswitch_tables(0))
    elif isinstance(key, SecretKey):
        data = rlwe_enc.encrypt_sk(m, take_static(key.s, rows, -2, max_runs=1), ctx.ring, rows, rng, p.sigma)
    else:
        raise TypeError(f"encrypt: key must be a PublicKey or SecretKey, got {type(key).__name__}")
    return Ciphertext(data=data, params=p)


def check_ct(ct, ctx: BFVContext, what: str, *, any_degree: bool = False) -> Ciphertext:
    """Raise unless ``ct`` is a BFV Ciphertext of the context's set (degree 1, or 1-2 with
    ``any_degree``) in the NTT domain."""
    if not isinstance(ct, Ciphertext):
        raise TypeError(f"{what}: expected a bfv.Ciphertext, got {type(ct).__name__}")
    if ct.params != ctx.params:
        raise ValueError(f"{what}: ciphertext is for {ct.params.name!r}, context for {ctx.params.name!r}")
    if not ct.is_ntt:
        raise ValueError(f"{what}: the ciphertext is in the coefficient domain; BFV evaluates in the NTT domain")
    if not any_degree and getattr(ct.data, "ndim", 0) >= 3 and ct.data.shape[-3] == 3:
        raise ValueError(f"{what}: the ciphertext has degree 2 (mul(..., relinearize=False)); relinearize it first")
    check_data(ct.data, ct.params, ct.params.num_q, what, any_degree=any_degree)
    return ct


def phase_coeffs(ct: Ciphertext, ctx: BFVContext, sk: SecretKey) -> jax.Array:
    """The phase x = c0 + c1 s (+ c2 s^2) in the coefficient domain: uint32[..., L, N]."""
    rows = ctx.q_rows
    x = rlwe_enc.phase(ct.data, take_static(sk.s, rows, -2, max_runs=1), ctx.ring, rows)
    return ops.intt(x, ctx.ring, rows)


def decrypt(ct: Ciphertext, ctx: BFVContext, sk: SecretKey) -> Plaintext:
    """m = round(t x / Q) mod t for the phase x (any degree): a Plaintext. Jittable."""
    ctx = check_context(ctx, "decrypt")
    check_ct(ct, ctx, "decrypt", any_degree=True)
    if not isinstance(sk, SecretKey):
        raise TypeError(f"decrypt: expected a SecretKey, got {type(sk).__name__}")
    if sk.params != ctx.params:
        raise ValueError(f"decrypt: secret key is for {sk.params.name!r}, context for {ctx.params.name!r}")
    c = ctx.codec
    tx = ops.mul_limb_consts(phase_coeffs(ct, ctx, sk), c.t_mod_q, ctx.ring, ctx.q_rows)
    v = ops.mixed_radix_conv(tx, c.to_t)[..., 0, :]                       # [t x]_Q mod t
    return Plaintext(data=mul_const_t(v, c.neg_q_inv), params=ctx.params)


def noise_coeffs(ct: Ciphertext, ctx: BFVContext, sk: SecretKey) -> jax.Array:
    """[t x]_Q's residues (coefficient domain, uint32[..., L, N]): t times the phase; its
    centered value is the noise E (:func:`jax_fhe.bfv.noise_budget`). Jittable."""
    ctx = check_context(ctx, "noise")
    check_ct(ct, ctx, "noise", any_degree=True)
    return ops.mul_limb_consts(phase_coeffs(ct, ctx, sk), ctx.codec.t_mod_q, ctx.ring, ctx.q_rows)


