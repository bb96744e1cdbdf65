"""The giant steps of a baby-step giant-step linear transform as one XLA FFI primitive.

``diagonal_sums`` computes, for giant steps g, ciphertext parts c = 0, 1 and rows j,

    out[g][..., c, j, t] = sum_i pts[index[g, i], j, t >> s] * xs[i][..., c, j, t]  mod p_j

over the baby steps i with ``index[g, i] >= 0``: every baby rotation is read where it lies
(never stacked into a copy) and every diagonal once. With s = 0 the diagonals are whole NTT-domain
polynomials; a plaintext packing n < N/2 slots repeats each NTT value N/2n times in adjacent
positions (the polynomial is one in X^(N/2n)), so its diagonal can be held once per run of equal
words, ``N >> s`` words per row, s = log2(N/2n): half or less of the memory and of the reads. :func:`jax_fhe.circuits.lintrans` uses it
for the products of its giant steps; the semantics are in ``ffi/diagonal_args.h``.
"""
from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ._checks import as_context, as_poly, check_canonical
from .modarith import add_mod

# per kernel call: more baby rotations are summed over several calls, more giant steps loop
MAX_BABY = 32


def diagonal_sums(xs: Sequence, pts, index, ctx, rows: Sequence[int] | None = None) -> list:
    """The giant-step sums of a BSGS linear transform.

    xs:    K arrays uint32[B..., 2, R, N]   the baby rotations (degree-1 ciphertexts, NTT
                                            domain), each with the same batch axes or none
    pts:   uint32[D, R, N >> s]             the diagonals (NTT domain), each word standing for
                                            2^s adjacent coefficients (module doc; s >= 0)
    index: int[G, K]                        the diagonal giant step g multiplies baby step i
                                            by, or -1 where giant step g has none
    ctx, rows:                              the RNS context and the table rows of the R rows
    Returns G arrays uint32[B..., 2, R, N] (canonical residues).

    Under ``jax.vmap``, a baby rotation the map does not batch must have no batch axes of its
    own (the kernel serves one entry to all or takes every entry): an error says so otherwise.
    All G sums are returned at once (G x [B..., 2, R, N] live together).
    """
    ctx = as_context(ctx, "diagonal_sums")
    xs = list(xs)
    if not xs:
        raise ValueError("diagonal_sums: give at least one baby rotation")
    host_pts = pts
    if getattr(pts, "dtype", None) is None or np.dtype(pts.dtype) != np.uint32:
        raise TypeError(f"diagonal_sums: pts must be a uint32 array, got "
                        f"{getattr(pts, 'dtype', type(pts).__name__)}")
    if pts.ndim != 3:
        raise ValueError(f"diagonal_sums: pts must be uint32[D, R, N >> s], got shape {tuple(pts.shape)}")
    m = pts.shape[-1]
    if m < 1 or m & (m - 1) or ctx.n % m:
        raise ValueError(f"diagonal_sums: pts rows hold {m} words; expected N = {ctx.n} divided by a power of two")
    pts = jnp.asarray(pts)
    r = pts.shape[-2]
    rows = ctx.rows_for(r, rows)
    check_canonical(host_pts, ctx.primes_for(rows), "diagonal_sums")
    host_xs = xs
    xs = [as_poly(x, "diagonal_sums", ctx.n) for x in xs]
    for x, h in zip(xs, host_xs):
        if x.ndim < 3 or x.shape[-3:] != (2, r, ctx.n):
            raise ValueError(f"diagonal_sums: each baby rotation must be uint32[..., 2, {r}, {ctx.n}], "
                             f"got {x.shape}")
        check_canonical(h, ctx.primes_for(rows), "diagonal_sums")
    try:
        lead = jnp.broadcast_shapes(*(x.shape[:-3] for x in xs))
    except ValueError:
        raise ValueError(f"diagonal_sums: the baby rotations' batch axes {[x.shape[:-3] for x in xs]} "
                         "do not broadcast") from None
    size = int(np.prod(lead))
    for x in xs:
        if int(np.prod(x.shape[:-3])) not in (1, size):
            raise ValueError(f"diagonal_sums: a baby rotation has batch axes {x.shape[:-3]}; each needs "
                             f"all {lead} entries or a single one")
    index = np.asarray(index)
    if not np.issubdtype(index.dtype, np.integer) or index.ndim != 2 or index.shape[1] != len(xs) \
            or index.shape[0] < 1:
        raise ValueError(f"diagonal_sums: index must be an integer array [G, {len(xs)}] (G >= 1), got "
                         f"{index.dtype}{list(index.shape)}")
    if ((index < -1) | (index >= pts.shape[0])).any():
        raise ValueError(f"diagonal_sums: index entries must be -1 or diagonal numbers in [0, {pts.shape[0]})")
    moduli = np.asarray([int(p) for p in ctx.primes_for(rows)], dtype=np.int64)
    out = jax.ShapeDtypeStruct(lead + (2, r, ctx.n), jnp.uint32)
    total = None
    for k0 in range(0, len(xs), MAX_BABY):   # partial sums over chunks of baby steps
        part = index[:, k0:k0 + MAX_BABY]
        call = jax.ffi.ffi_call("jax_fhe_diagonal_sums", [out] * part.shape[0], vmap_method="expand_dims")
        sums = call(pts, *xs[k0:k0 + MAX_BABY], index=part.astype(np.int32).reshape(-1), moduli=moduli)
        total = sums if total is None else [add_mod(a, b, ctx, rows) for a, b in zip(total, sums)]
    return list(total)
