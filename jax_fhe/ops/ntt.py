"""Forward and inverse negacyclic NTT over uint32[..., L, N] (XLA FFI primitives).

Forward: natural-order coefficients -> evaluations at psi^(2 brev(k) + 1) in bit-reversed
order k (psi: the context's primitive 2N-th root for that limb's prime). The inverse undoes it
exactly. Every limb uses its own prime; all limbs and batch entries run in one launch.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ._checks import as_context, as_poly, check_canonical, check_ring_degree, rows_array

# Below this bound the CUDA kernels use Harvey's lazy butterflies (values up to 4q fit a word).
LAZY_PRIME_BOUND = 1 << 30


# Limbs per row group (ffi/ntt_args.h: kRowGroupSize).
ROW_GROUP_SIZE = 4


def lazy_butterflies(ctx, rows) -> bool:
    """Whether every prime of ``rows`` is below LAZY_PRIME_BOUND (the kernels' ``lazy`` attribute)."""
    return all(ctx.primes[r] < LAZY_PRIME_BOUND for r in rows)


@functools.lru_cache(maxsize=256)
def row_groups(rows: tuple[int, ...]) -> np.ndarray:
    """The forward NTT's ``row_groups`` attribute for limbs using table ``rows``: the limbs of each
    row in groups of up to ROW_GROUP_SIZE, padded with -1, flattened to int32[G * ROW_GROUP_SIZE];
    empty where no row repeats.
    A schedule only: the GPU transforms a group's limbs together, loading each twiddle once for
    all of them (ModUp's stacked conversions repeat every prime three or four times), and the
    result does not depend on it."""
    by_row: dict[int, list[int]] = {}
    for limb, r in enumerate(rows):
        by_row.setdefault(r, []).append(limb)
    groups = [limbs[i:i + ROW_GROUP_SIZE] for limbs in by_row.values()
              for i in range(0, len(limbs), ROW_GROUP_SIZE)]
    if len(groups) == len(rows):
        out = np.zeros((0,), np.int32)
    else:
        out = np.asarray([l for g in groups for l in g + [-1] * (ROW_GROUP_SIZE - len(g))], np.int32)
    out.setflags(write=False)  # cached: shared by every call with these rows
    return out


def ntt(x, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """Forward NTT. ``x``: uint32[..., L, N] with residues in [0, q); ``rows``: which context
    primes the L limbs use (default: the first L). Returns uint32[..., L, N]."""
    ctx = as_context(ctx, "ntt")
    host = x
    x = as_poly(x, "ntt", ctx.n)
    rows = ctx.rows_for(x.shape[-2], rows)
    check_canonical(host, ctx.primes_for(rows), "ntt")
    call = jax.ffi.ffi_call("jax_fhe_ntt_forward", jax.ShapeDtypeStruct(x.shape, x.dtype),
                            vmap_method="expand_dims")
    return call(x, rows_array(rows), ctx.moduli, ctx.psi, ctx.psi_shoup, lazy=lazy_butterflies(ctx, rows),
                row_groups=row_groups(rows))


def ntt_lift(x, ctx, limbs: int | None = None, rows: Sequence[int] | None = None) -> jax.Array:
    """Forward NTT of small signed integers in every limb: ``x`` int32[..., N] with |x| below
    every used prime -> uint32[..., L, N], limb l = NTT(x mod q_l). Equals
    ``ntt(lift(x))`` but never writes the L lifted copies: on the GPU (N <= 4096, primes below
    2^30) the transform reads x once per limb and lifts it as it loads (gadget digits before
    key switching and external products). ``limbs`` (default: every context prime) or ``rows``
    picks the primes. The CPU kernel rejects out-of-range values; on the GPU they are the
    caller's contract."""
    ctx = as_context(ctx, "ntt_lift")
    dtype = getattr(x, "dtype", None)
    if dtype is None or np.dtype(dtype) != np.int32:
        raise TypeError(f"ntt_lift: expected an int32 array [..., N] of small signed values, got "
                        f"{type(x).__name__ if dtype is None else np.dtype(dtype)}")
    x = jnp.asarray(x)
    if x.ndim < 1:
        raise ValueError(f"ntt_lift: expected shape [..., N], got {x.shape}")
    check_ring_degree(x.shape[-1])
    if x.shape[-1] != ctx.n:
        raise ValueError(f"ntt_lift: data has N={x.shape[-1]} but the tables were built for N={ctx.n}")
    if rows is None:
        rows = ctx.rows_for(len(ctx.primes) if limbs is None else int(limbs))
    else:
        rows = ctx.rows_for(len(tuple(rows)), rows)
        if limbs is not None and int(limbs) != len(rows):
            raise ValueError(f"ntt_lift: limbs={limbs} but {len(rows)} rows were given")
    out = jax.ShapeDtypeStruct(x.shape[:-1] + (len(rows), x.shape[-1]), jnp.uint32)
    call = jax.ffi.ffi_call("jax_fhe_ntt_forward_lift", out, vmap_method="expand_dims")
    return call(x, rows_array(rows), ctx.moduli, ctx.psi, ctx.psi_shoup, lazy=lazy_butterflies(ctx, rows))


def intt(x, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """Inverse NTT (including the N^-1 scaling): ``intt(ntt(x)) == x``."""
    ctx = as_context(ctx, "intt")
    host = x
    x = as_poly(x, "intt", ctx.n)
    rows = ctx.rows_for(x.shape[-2], rows)
    check_canonical(host, ctx.primes_for(rows), "intt")
    call = jax.ffi.ffi_call("jax_fhe_ntt_inverse", jax.ShapeDtypeStruct(x.shape, x.dtype),
                            vmap_method="expand_dims")
    return call(x, rows_array(rows), ctx.moduli, ctx.ipsi, ctx.ipsi_shoup, ctx.n_inv,
                ctx.n_inv_shoup, lazy=lazy_butterflies(ctx, rows))
