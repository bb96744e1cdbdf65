"""Forward and inverse negacyclic NTT over uint32[..., L, N] (XLA FFI primitives).

Forward: natural-order coefficients -> evaluations at psi^(2 brev(k) + 1) in bit-reversed
order k (psi: the context's primitive 2N-th root for that limb's prime). The inverse undoes it
exactly. Every limb uses its own prime; all limbs and batch entries run in one launch.
"""
from __future__ import annotations

from collections.abc import Sequence

import jax

from ._checks import as_context, as_poly, rows_array

# Below this bound the CUDA kernels use Harvey's lazy butterflies (values up to 4q fit a word).
LAZY_PRIME_BOUND = 1 << 30


def _lazy(ctx, rows) -> bool:
    return all(ctx.primes[r] < LAZY_PRIME_BOUND for r in rows)


def ntt(x, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """Forward NTT. ``x``: uint32[..., L, N] with residues in [0, q); ``rows``: which context
    primes the L limbs use (default: the first L). Returns uint32[..., L, N]."""
    ctx = as_context(ctx, "ntt")
    x = as_poly(x, "ntt", ctx.n)
    rows = ctx.rows_for(x.shape[-2], rows)
    call = jax.ffi.ffi_call("jax_fhe_ntt_forward", jax.ShapeDtypeStruct(x.shape, x.dtype),
                            vmap_method="expand_dims")
    return call(x, rows_array(rows), ctx.moduli, ctx.psi, ctx.psi_shoup, lazy=_lazy(ctx, rows))


def intt(x, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """Inverse NTT (including the N^-1 scaling): ``intt(ntt(x)) == x``."""
    ctx = as_context(ctx, "intt")
    x = as_poly(x, "intt", ctx.n)
    rows = ctx.rows_for(x.shape[-2], rows)
    call = jax.ffi.ffi_call("jax_fhe_ntt_inverse", jax.ShapeDtypeStruct(x.shape, x.dtype),
                            vmap_method="expand_dims")
    return call(x, rows_array(rows), ctx.moduli, ctx.ipsi, ctx.ipsi_shoup, ctx.n_inv,
                ctx.n_inv_shoup, lazy=_lazy(ctx, rows))
