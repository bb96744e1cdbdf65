"""Batch encoding (SIMD slots) for BFV and BGV: N values mod t <-> m(X) in Z_t[X]/(X^N + 1).

With t = 1 (mod 2N), X^N + 1 splits mod t into N linear factors X - zeta^e (zeta a primitive
2N-th root of unity mod t, e odd), and m(X) is given by its values at the N roots. The slots
form a 2 x N/2 matrix: slot (r, j) is m(zeta^(+-5^j)), + for row 0 and - for row 1, stored flat
as index r N/2 + j. Then the automorphism X -> X^(5^k) rotates both rows left by k (slot j
takes the value of slot j + k), and X -> X^(2N-1) swaps the rows: the rotations of
:func:`jax_fhe.bfv.rotate_rows` and :func:`jax_fhe.bfv.rotate_columns`. Products and sums of
plaintext polynomials are slot-wise products and sums mod t.

Encoding is an inverse NTT mod t (:func:`jax_fhe.ops.intt` over a one-prime context for t)
after a fixed permutation of the slots into the NTT's bit-reversed evaluation order; decoding
is the forward NTT and the inverse permutation. Jittable, batched, exact.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import ops, rns
from ..rns.pytree import pytree_dataclass
from ..rns.shoup import bit_reverse_permutation
from .types import Plaintext, check_plaintext


@pytree_dataclass
class PlainTables:
    """The plaintext ring's tables: ``ring`` (an RNSContext of the one prime t), ``to_ntt``
    int32[N] (NTT position -> slot index, for encoding) and ``to_slot`` int32[N] (slot index ->
    NTT position, for decoding)."""

    ring: rns.RNSContext
    to_ntt: jax.Array
    to_slot: jax.Array


def slot_positions(n: int) -> np.ndarray:
    """int64[N]: the NTT position (of :func:`jax_fhe.ops.ntt`, slot k = m(psi^(2 brev(k) + 1)))
    of every flat slot index r N/2 + j, whose root is psi^(+-5^j)."""
    half, two_n = n // 2, 2 * n
    g = np.ones(half, dtype=np.int64)
    for j in range(1, half):
        g[j] = g[j - 1] * 5 % two_n
    exps = np.concatenate([g, two_n - g])
    return bit_reverse_permutation(n)[(exps - 1) // 2].astype(np.int64)


def make_plain_tables(t: int, n: int) -> PlainTables:
    """The plaintext tables for modulus ``t`` and degree ``n``: a one-prime RNS context over t and
    the slot permutations (flat slot index <-> NTT position) in both directions."""
    pos = slot_positions(n)
    inv = np.empty_like(pos)
    inv[pos] = np.arange(n)
    return PlainTables(ring=rns.make_context([int(t)], n), to_ntt=jnp.asarray(inv.astype(np.int32)),
                       to_slot=jnp.asarray(pos.astype(np.int32)))


def _as_values(values, t: int, n: int):
    """Slot values as uint32[..., N] in [0, t): numpy integers (any sign) are reduced on the host;
    jax arrays must be int32 (reduced mod t) or uint32 (reduced mod t)."""
    if isinstance(values, jax.Array) or isinstance(values, jax.core.Tracer):
        if values.dtype == jnp.int32:
            out = jnp.remainder(values, jnp.int32(t)).astype(jnp.uint32)
        elif values.dtype == jnp.uint32:
            out = jnp.remainder(values, jnp.uint32(t))
        else:
            raise TypeError(f"encode: slot values must be integers (int32 or uint32 jax arrays), got {values.dtype}")
    else:
        arr = np.asarray(values)
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"encode: slot values must be integers, got {arr.dtype}")
        out = jnp.asarray(np.mod(arr.astype(np.int64) if arr.dtype != np.uint64 else arr, t).astype(np.uint32))
    if out.ndim < 1 or out.shape[-1] != n:
        raise ValueError(f"encode: expected slot values of shape [..., N = {n}] (row 0 then row 1 of the "
                         f"2 x {n // 2} matrix), got {tuple(out.shape)}")
    return out


def encode(values, ctx) -> Plaintext:
    """Slot values (integers, shape [..., N]: the 2 x N/2 matrix row by row; reduced mod t) ->
    a :class:`Plaintext` whose slots they are. ``ctx``: a BFV or BGV context."""
    p = ctx.params
    x = _as_values(values, p.plain_modulus, p.n)
    x = jnp.take(x, ctx.plain.to_ntt, axis=-1)
    coeffs = ops.intt(x[..., None, :], ctx.plain.ring)[..., 0, :]
    return Plaintext(data=coeffs, params=p)


def decode(pt: Plaintext, ctx) -> jax.Array:
    """The slot values of a plaintext: uint32[..., N] in [0, t) (row 0 then row 1)."""
    check_plaintext(pt, ctx.params, "decode")
    ev = ops.ntt(pt.data[..., None, :], ctx.plain.ring)[..., 0, :]
    return jnp.take(ev, ctx.plain.to_slot, axis=-1)
