"""Input validation shared by the primitive wrappers (runs at trace time, before lowering).

Residues must be canonical (in [0, q) for their limb's prime q). Host data (numpy arrays) is
checked here, where it costs one pass over memory that is already on the host
(:func:`check_canonical`); device arrays and traced values are the caller's contract: checking
them would need a device reduction and a synchronisation before every kernel, and a
non-canonical input gives unspecified (wrong, but memory-safe) results."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..rns.context import RNSContext, check_ring_degree
from .limbs import take_static


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


def limb_constants(table, ctx: RNSContext, rows) -> jax.Array:
    """Per-prime constants ``table`` (shape [T, ...]) for the limbs that use ``rows``; no gather
    when the rows are the whole context in order or a few runs of consecutive rows."""
    return take_static(table, rows, 0)


def check_canonical(x, primes, what: str, limbs: slice | None = None) -> None:
    """Raise ValueError if host data ``x`` (a numpy array uint32[..., L, N]) holds a residue
    >= its limb's prime (``primes[i]`` for limb i, or for the limbs ``limbs`` selects). Device
    arrays and tracers pass unchecked (the documented contract; see the module docstring)."""
    if not isinstance(x, np.ndarray):
        return
    part = x if limbs is None else x[..., limbs, :]
    q = np.asarray([int(p) for p in primes], dtype=np.uint64).reshape((-1, 1))
    if part.shape[-2] != q.shape[0] or part.size == 0:
        return  # a shape error is reported by the caller's own checks
    bad = part.astype(np.uint64) >= q
    if bad.any():
        pos = np.unravel_index(int(np.argmax(bad)), bad.shape)
        limb = pos[-2] + ((limbs.start or 0) if limbs is not None else 0)
        raise ValueError(f"{what}: inputs must be canonical residues in [0, q): limb {limb} (q = {int(q[pos[-2], 0])}) "
                         f"holds {int(part[pos])} at index {tuple(int(i) for i in pos)}; reduce external data "
                         "first (jax_fhe.ops.reduce_mod)")
