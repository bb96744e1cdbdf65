"""Selecting limbs (or any axis entries) at static positions without a gather where possible."""
from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


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


def take_limbs(x: jax.Array, positions: Sequence[int]) -> jax.Array:
    """Limbs ``positions`` (static) of x: uint32[..., L, N] -> uint32[..., len(positions), N];
    a slice (fusible into consumers) where the positions run consecutively, else a gather."""
    return take_static(x, positions, -2, max_runs=1)
