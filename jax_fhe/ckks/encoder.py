"""Encoding complex/real vectors as plaintexts through the canonical embedding (host side).

Slot j of a polynomial m(X) is m(zeta^(5^j)), zeta = exp(i pi / N), for j < N/2; the
evaluations at zeta^(-5^j) are the conjugates, so m has real coefficients. Encoding computes
the coefficients with one float64 FFT of size N, multiplies by the scale and rounds to integers
(exact residues mod every prime, also beyond 2^53 through the float's mantissa and exponent).
Decoding reconstructs each coefficient exactly from its residues (big-integer CRT, centered),
divides by the scale in float64 and evaluates with one FFT.

Sparse packing: ``n`` slots (a power of two dividing N/2) are stored as the n-periodic vector
of N/2 slots, i.e. the polynomial lives in Z[X^(N/2n)]. Slot rotations act on it consistently.
"""
from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import ops
from ..rns.crt import crt_centered_float
from .context import CKKSContext, check_context
from .types import Plaintext, check_data


@functools.cache
def _slot_order(n: int) -> np.ndarray:
    """t_j = (5^j mod 2N - 1) / 4: slot j's position in the half-size transform below (a
    permutation of [0, N/2), since 5 generates the residues 1 mod 4 of Z/2N)."""
    e = np.ones(n // 2, dtype=np.int64)
    for j in range(1, n // 2):
        e[j] = e[j - 1] * 5 % (2 * n)
    return (e - 1) // 4


@functools.cache
def _slot_position(n: int) -> np.ndarray:
    """The inverse permutation: which slot sits at position t."""
    return np.argsort(_slot_order(n))


@functools.cache
def _twist(n: int) -> np.ndarray:
    """zeta^m for m < N/2, zeta = exp(i pi / N)."""
    return np.exp(1j * np.pi * np.arange(n // 2) / n)


# Slot j is p(zeta^(5^j)). With u_m = c_m + i c_(m + N/2) (m < N/2) and zeta^(5^j N/2) = i,
# slot j = sum_m u_m zeta^m (zeta^4)^(t_j m): an N/2-point DFT of u zeta^m read at t_j. So both
# directions take one complex FFT of half the ring size (a quarter of the N-point form's work).

def embed_inverse(z: np.ndarray, n: int) -> np.ndarray:
    """Real coefficients float64[..., N] of the polynomial whose N/2 slots are z[..., N/2]."""
    h = n // 2
    u = np.fft.fft(np.take(z, _slot_position(n), axis=-1), axis=-1)
    u *= np.conj(_twist(n)) / h
    return np.concatenate([u.real, u.imag], axis=-1)


def embed(coeffs: np.ndarray, n: int) -> np.ndarray:
    """Slots complex128[..., N/2] of real coefficients float64[..., N]."""
    h = n // 2
    u = (coeffs[..., :h] + 1j * coeffs[..., h:]) * _twist(n)
    return (np.fft.ifft(u, axis=-1) * h)[..., _slot_order(n)]


def check_slots(slots: int, n: int) -> int:
    slots = int(slots)
    if slots < 1 or slots & (slots - 1) or slots > n // 2:
        raise ValueError(f"slot count {slots} must be a power of two in [1, N/2 = {n // 2}]")
    return slots


def integers_to_residues(x: np.ndarray, primes) -> np.ndarray:
    """Integer-valued float64[..., N] -> uint32[..., L, N], exactly (any magnitude)."""
    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError("encode: values are not finite")
    q = np.asarray(primes, dtype=np.int64).reshape((-1, 1))
    small = np.abs(x) < 2.0**62
    out = np.mod(np.where(small, x, 0).astype(np.int64)[..., None, :], q)
    if not small.all():
        mant, expo = np.frexp(np.where(small, 0.0, x))  # x = mant 2^expo, |mant| in [0.5, 1)
        m = (mant * 2.0**53).astype(np.int64)
        e = np.maximum(expo - 53, 0)
        for ee in np.unique(e[~small]):
            sel = (~small) & (e == ee)
            pw = np.asarray([pow(2, int(ee), int(p)) for p in primes], dtype=np.int64).reshape((-1, 1))
            big = np.mod(np.mod(m[..., None, :], q) * pw % q, q)  # (< 2^31)^2 < 2^62
            out = np.where(sel[..., None, :], big, out)
    return out.astype(np.uint32)


def scaled_coefficients(values, ctx: CKKSContext, *, level: int | None = None,
                        scale: float | None = None, what: str = "encode") -> tuple:
    """The integer coefficients of :func:`encode` before they become residues: (coeffs,
    level, scale, slots) with ``coeffs`` integer-valued float64[..., N] = round(scale * c), c the
    real coefficients of the polynomial whose slots are ``values`` (validated as in
    :func:`encode`, whose errors these are)."""
    ctx = check_context(ctx, what)
    p = ctx.params
    level = p.default_level if level is None else p.check_level(level)
    scale = p.default_scale(level) if scale is None else float(scale)
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"{what}: scale must be a finite positive number, got {scale}")
    z = np.asarray(values)
    if z.ndim < 1:
        raise ValueError(f"{what}: values must have shape [..., slots]")
    if not (np.issubdtype(z.dtype, np.number) or z.dtype == bool):
        raise TypeError(f"{what}: values must be numbers, got {z.dtype}")
    slots = check_slots(z.shape[-1], p.n)
    z = z.astype(np.complex128)
    if not np.all(np.isfinite(z)):
        raise ValueError(f"{what}: values are not finite (NaN or infinity)")
    full = np.tile(z, (1,) * (z.ndim - 1) + (p.slots // slots,))
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, as "too large"
        coeffs = np.round(embed_inverse(full, p.n) * scale)
    check_fits(coeffs, p, level, scale, what)
    return coeffs, level, scale, slots


def encode(values, ctx: CKKSContext, *, level: int | None = None, scale: float | None = None) -> Plaintext:
    """Encode values[..., n] (complex or real; n a power of two <= N/2 slots) as a
    :class:`Plaintext` at ``level`` (default: the params' encryption level) and ``scale``
    (default: that level's default scale). Leading axes are batch axes.

    Raises ValueError for values that are not finite (NaN, inf) and for values too large for the
    level: every coefficient round(scale * c) must be a centered residue of the level's modulus
    Q_l, |round(scale * c)| <= (Q_l - 1) / 2 (a larger one would wrap and decode to a wrong
    number). |c| is at most max |value|, so values up to (Q_l / 2) / scale in magnitude always
    fit; the error names that bound."""
    coeffs, level, scale, slots = scaled_coefficients(values, ctx, level=level, scale=scale)
    p = ctx.params
    res = integers_to_residues(coeffs, p.primes(level))
    data = ops.ntt(jnp.asarray(res), ctx.ring, p.rows(level))
    return Plaintext(data=data, level=level, scale=scale, slots=slots, params=p)


def encode_extended(values, ctx: CKKSContext, *, level: int, scale: float) -> jax.Array:
    """The encoding of :func:`encode` on the rows of ``level`` *and* the special rows:
    uint32[..., L + alpha_p, N] (NTT), for multiplying ciphertexts held in the extended basis QP
    before ModDown (double-hoisted linear transforms)."""
    coeffs, level, scale, _ = scaled_coefficients(values, ctx, level=level, scale=scale,
                                                  what="encode_extended")
    p = ctx.params
    rows = tuple(p.rows(level)) + tuple(p.special_rows)
    res = integers_to_residues(coeffs, [p.all_primes[r] for r in rows])
    return ops.ntt(jnp.asarray(res), ctx.ring, rows)


def compact_coefficients(values, ctx: CKKSContext, *, level: int, scale: float, bits: int) -> tuple:
    """The coefficients of :func:`encode` as small integers times powers of two, for plaintexts
    expanded on the device (``ops.ntt_lift``) instead of stored as L residues per coefficient.

    Returns (k, s): int32[..., N] and int64[...] with |k| <= 2^bits and 2^s k within
    2^(s-1) of round(scale * c) coefficient by coefficient (exact when s = 0); s is the
    smallest shift that fits each polynomial's largest coefficient in ``bits`` bits."""
    if not 1 <= int(bits) <= 30:
        raise ValueError(f"compact_coefficients: bits must be in [1, 30], got {bits}")
    coeffs, _, _, _ = scaled_coefficients(values, ctx, level=level, scale=scale,
                                          what="compact_coefficients")
    big = np.max(np.abs(coeffs), axis=-1)
    _, expo = np.frexp(big)                                  # big < 2^expo
    s = np.maximum(expo.astype(np.int64) - int(bits), 0)
    k = np.round(coeffs / np.ldexp(1.0, s)[..., None])       # exact division by a power of two
    return k.astype(np.int32), s


def check_fits(coeffs: np.ndarray, params, level: int, scale: float, what: str) -> None:
    """Raise ValueError unless the integer-valued float64 ``coeffs`` (scaled message
    coefficients) are centered residues of level ``level``'s modulus: |c| <= (Q_l - 1) / 2.
    An overflow to infinity during scaling counts as too large."""
    half = (params.modulus(level) - 1) // 2
    finite = bool(np.all(np.isfinite(coeffs)))
    biggest = float(np.max(np.abs(coeffs))) if finite and coeffs.size else 0.0
    if finite and int(biggest) <= half:
        return
    # the bound in value units: (Q_l / 2) / scale, also where Q_l / 2 exceeds the float range
    log_fit = math.log2(half) - math.log2(scale)
    fit = f"{2.0 ** log_fit:.3g}" if log_fit < 1023 else f"2^{log_fit:.1f}"
    got = f"2^{math.log2(biggest):.1f}" if finite else "beyond the float range (overflow)"
    raise ValueError(
        f"{what}: values too large for level {level}: a scaled coefficient is {got}, but level "
        f"{level}'s modulus holds |coefficient| < Q/2 = 2^{math.log2(half):.1f}; values up to ~{fit} in "
        f"magnitude fit at level {level} with scale 2^{math.log2(scale):.1f} (use a higher level or a "
        f"smaller scale)")


def decode(pt: Plaintext, ctx: CKKSContext, *, real: bool = False) -> np.ndarray:
    """Plaintext -> complex128[..., slots] (float64 with ``real=True``), on the host."""
    ctx = check_context(ctx, "decode")
    if not isinstance(pt, Plaintext):
        raise TypeError(f"decode: expected a Plaintext, got {type(pt).__name__}")
    p = pt.params
    if p != ctx.params:
        raise ValueError(f"decode: plaintext is for {p.name!r}, context for {ctx.params.name!r}")
    check_data(pt.data, p, pt.level, (), "decode")
    res = np.asarray(ops.intt(pt.data, ctx.ring, p.rows(pt.level)))
    coeffs = crt_centered_float(res, p.primes(pt.level)) / pt.scale
    if not np.all(np.isfinite(coeffs)):
        raise ValueError("decode: coefficients exceed the float range (decryption failed?)")
    z = embed(coeffs, p.n)[..., :pt.slots]
    return z.real if real else z
