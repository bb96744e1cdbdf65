"""Input validation shared by the primitive wrappers (runs at trace time, before lowering)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..rns.context import RNSContext, check_ring_degree


def as_poly(x, what: str, n: int | None = None) -> jax.Array:
    """Return x as a uint32[..., L, N] array or raise a TypeError/ValueError saying why not."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        raise TypeError(f"{what}: expected a uint32 array of shape [..., L, N], got {type(x).__name__}")
    if np.dtype(dtype) != np.uint32:
        raise TypeError(f"{what}: expected dtype uint32 (RNS residues), got {np.dtype(dtype)}")
    x = jnp.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"{what}: expected shape [..., L, N], got {x.shape}")
    check_ring_degree(x.shape[-1])
    if n is not None and x.shape[-1] != n:
        raise ValueError(f"{what}: data has N={x.shape[-1]} but the tables were built for N={n}")
    return x


def as_context(ctx, what: str) -> RNSContext:
    if not isinstance(ctx, RNSContext):
        raise TypeError(f"{what}: expected an RNSContext (jax_fhe.rns.make_context), got {type(ctx).__name__}")
    return ctx


def rows_array(rows) -> np.ndarray:
    """The kernels' ``rows`` operand: int32[1, L]. The handlers accept any leading axes of size
    1, and the extra axis keeps XLA from rewriting rows 0..L-1 into an iota instruction, which
    the GPU would run as a kernel of its own before every transform that takes it."""
    return np.asarray(rows, dtype=np.int32).reshape(1, -1)


def take_static(x, positions, axis: int, max_runs: int = 8) -> jax.Array:
    """``x`` at the static ``positions`` along ``axis``, as a slice or a concatenation of a few
    slices (one per run of consecutive positions). Slices and concatenations fuse into their
    element-wise consumers; a gather with constant indices is materialised as its own kernel
    (one more launch, and for data a full copy). More than ``max_runs`` runs fall back to a
    gather (for data pass max_runs=1: XLA may materialise a concatenation of several slices
    where it would have fused the gather into the consumer)."""
    positions = tuple(int(p) for p in positions)
    axis = axis % x.ndim
    if positions == tuple(range(x.shape[axis])):
        return x
    runs = []
    for p in positions:
        if runs and p == runs[-1][1]:
            runs[-1][1] += 1
        else:
            runs.append([p, p + 1])
    if not positions or len(runs) > max_runs:
        return jnp.take(x, np.asarray(positions, dtype=np.int32), axis=axis)
    parts = [jax.lax.slice_in_dim(x, a, b, axis=axis) for a, b in runs]
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=axis)


def limb_constants(table, ctx: RNSContext, rows) -> jax.Array:
    """Per-prime constants ``table`` (shape [T, ...]) for the limbs that use ``rows``; no gather
    when the rows are the whole context in order or a few runs of consecutive rows."""
    return take_static(table, rows, 0)
