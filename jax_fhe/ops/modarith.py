"""Element-wise modular arithmetic on uint32[..., L, N] in plain jax.numpy.

XLA fuses these with their neighbours, so they need no custom kernel. Products use
Montgomery reduction built from 32-bit ``lax.mul``/``lax.mulhi`` (no x64 needed). Inputs must be
canonical residues in [0, q) of the limb's prime (checked for numpy inputs; a contract for device
arrays: see :mod:`jax_fhe.ops`); outputs are canonical too.
:func:`reduce_mod` accepts any uint32 words.
"""
from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax import lax

from ._checks import as_context, as_poly, check_canonical, limb_constants

_U32 = jnp.uint32


def _limb_consts(ctx, x, rows, what, canonical=True):
    ctx = as_context(ctx, what)
    host = x
    x = as_poly(x, what, ctx.n)
    rows = ctx.rows_for(x.shape[-2], rows)
    if canonical:
        check_canonical(host, ctx.primes_for(rows), what)
    # broadcast the per-limb constants to the data's shape: lax.mulhi needs equal shapes
    full = lambda a: jnp.broadcast_to(limb_constants(a, ctx, rows)[:, None], x.shape)  # noqa: E731
    return x, full(ctx.moduli), full(ctx.neg_qinv), full(ctx.r2)


def _same_shape(a, b, what, ctx=None, rows=None):
    host = b
    b = as_poly(b, what)
    if a.shape != b.shape:
        raise ValueError(f"{what}: operand shapes differ: {a.shape} vs {b.shape}")
    if ctx is not None:
        check_canonical(host, ctx.primes_for(ctx.rows_for(b.shape[-2], rows)), what)
    return b


def _csub(x, q):
    return jnp.minimum(x, x - q)  # x < 2q: x - q wraps above x when x < q


def _mont(a, b, q, nqinv):
    """a * b * 2^-32 mod q for a * b < q * 2^32, in [0, q)."""
    lo = a * b
    hi = lax.mulhi(a, b)
    m = lo * nqinv
    # lo + low32(m q) is 0 or 2^32: the carry into the high word is (lo != 0)
    u = hi + lax.mulhi(m, q) + (lo != 0).astype(_U32)
    return _csub(u, q)


def add_mod(a, b, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """a + b mod q per limb (``a``, ``b``: uint32[..., L, N] canonical residues of the same shape)."""
    a, q, _, _ = _limb_consts(ctx, a, rows, "add_mod")
    b = _same_shape(a, b, "add_mod", ctx, rows)
    return _csub(a + b, q)


def sub_mod(a, b, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """a - b mod q per limb (``a``, ``b``: uint32[..., L, N] canonical residues of the same shape)."""
    a, q, _, _ = _limb_consts(ctx, a, rows, "sub_mod")
    b = _same_shape(a, b, "sub_mod", ctx, rows)
    return _csub(a + (q - b), q)


def neg_mod(a, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """-a mod q per limb (0 stays 0)."""
    a, q, _, _ = _limb_consts(ctx, a, rows, "neg_mod")
    return _csub(q - a, q)


def mul_mod(a, b, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """a * b mod q (two Montgomery steps: a b R^-1, then times R^2 R^-1)."""
    a, q, nqinv, r2 = _limb_consts(ctx, a, rows, "mul_mod")
    b = _same_shape(a, b, "mul_mod", ctx, rows)
    return _mont(_mont(a, b, q, nqinv), r2, q, nqinv)


def mul_limb_consts(x, consts, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """x * consts[l] mod q_l for every limb l: ``consts`` is uint32[L] (one residue per limb,
    e.g. a CRT factor or P^-1), ``x`` is uint32[..., L, N]."""
    ctx = as_context(ctx, "mul_limb_consts")
    host = x
    x = as_poly(x, "mul_limb_consts")
    check_canonical(host, ctx.primes_for(ctx.rows_for(x.shape[-2], rows)), "mul_limb_consts")
    consts = jnp.asarray(consts)
    if consts.dtype != _U32 or consts.shape != (x.shape[-2],):
        raise ValueError(f"mul_limb_consts: consts must be uint32[{x.shape[-2]}] (one per limb), "
                         f"got {consts.dtype}{list(consts.shape)}")
    return mul_mod(x, jnp.broadcast_to(consts[:, None], x.shape), ctx, rows)


def mac_mod(acc, a, b, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """acc + a * b mod q."""
    acc, q, _, _ = _limb_consts(ctx, acc, rows, "mac_mod")
    return _csub(acc + mul_mod(a, b, ctx, rows), q)


def reduce_mod(x, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """Any uint32 values -> canonical residues x mod q (e.g. to import external data)."""
    x, q, nqinv, r2 = _limb_consts(ctx, x, rows, "reduce_mod", canonical=False)
    one = jnp.ones_like(q)
    return _mont(_mont(x, r2, q, nqinv), one, q, nqinv)  # x R^2 R^-1 = x R; x R * 1 * R^-1


def mul_shoup(x, consts) -> jax.Array:
    """x * w_l mod p_l for every limb l without an RNS context (Shoup's method), for moduli that
    no context holds (e.g. a plaintext modulus t).

    x:      uint32[..., L, N], any values below 2^32.
    consts: uint32[3, L] = (p_l, w_l, floor(w_l 2^32 / p_l)) with w_l < p_l < 2^31
            (:func:`jax_fhe.rns.shoup` gives the third row).
    Returns canonical residues in [0, p_l)."""
    x = as_poly(x, "mul_shoup")
    consts = jnp.asarray(consts)
    if consts.dtype != _U32 or consts.shape != (3, x.shape[-2]):
        raise ValueError(f"mul_shoup: consts must be uint32[3, {x.shape[-2]}] (modulus, constant, Shoup "
                         f"companion per limb), got {consts.dtype}{list(consts.shape)}")
    p, w, ws = (jnp.broadcast_to(consts[i][:, None], x.shape) for i in range(3))
    return _csub(x * w - lax.mulhi(x, ws) * p, p)  # in [0, 2p) before the subtraction
