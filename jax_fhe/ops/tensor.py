"""The tensor product of degree-1 ciphertexts as an XLA FFI primitive.

(x0, x1) x (y0, y1) -> (x0 y0, x0 y1 + x1 y0, x1 y1) mod q, slot-wise in the NTT domain: one
kernel reads the four input polynomials once and writes the three outputs (the element-wise
jnp form, three products stacked, reads its inputs more than once)."""
from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

from ._checks import as_context, as_poly, check_canonical, limb_constants


def _degree_one(x, what: str, n: int) -> tuple:
    host = x
    x = as_poly(x, what, n)
    if x.ndim < 3 or x.shape[-3] != 2:
        raise ValueError(f"{what}: expected a degree-1 ciphertext's data uint32[..., 2, L, N], got {x.shape}")
    return x, host


def tensor_product(x, y, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """uint32[..., 3, L, N] = (x0 y0, x0 y1 + x1 y0, x1 y1) mod q for ``x``, ``y``:
    uint32[..., 2, L, N] of the same shape (NTT-domain residues on ``rows`` of ``ctx``; pass
    ``y = x`` for a square)."""
    ctx = as_context(ctx, "tensor_product")
    x, hx = _degree_one(x, "tensor_product", ctx.n)
    y, hy = _degree_one(y, "tensor_product", ctx.n)
    if x.shape != y.shape:
        raise ValueError(f"tensor_product: operand shapes differ: {x.shape} vs {y.shape}")
    rows = ctx.rows_for(x.shape[-2], rows)
    primes = ctx.primes_for(rows)
    check_canonical(hx, primes, "tensor_product")
    check_canonical(hy, primes, "tensor_product")
    consts = [limb_constants(t, ctx, rows) for t in (ctx.moduli, ctx.neg_qinv, ctx.r2)]
    out = jax.ShapeDtypeStruct(x.shape[:-3] + (3,) + x.shape[-2:], jnp.uint32)
    call = jax.ffi.ffi_call("jax_fhe_tensor_product", out, vmap_method="expand_dims")
    return call(x, y, *consts)
