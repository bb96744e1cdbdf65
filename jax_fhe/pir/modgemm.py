"""Batched modular GEMMs mod q_l (primes < 2^29) from exact int8 byte-plane products.

ExpPack's packing step is (#RNS * N) independent GEMMs H . C mod q_l (VIPIR §4.2), where the
paper uses INT32 cores with 64-bit accumulators and a lazy reduction every 32 MACs. JAX has no
64-bit integers without ``jax_enable_x64``, and XLA's int32 GEMMs do not reach tensor cores. So
we reuse the DB GEMM's idea: write both operands in balanced base-256 digits
(:func:`jax_fhe.pir.db_gemm.byte_planes`; a residue x < 2^29 is *exactly* sum_i 2^(8i) c_i with
c_i in [-128, 127], no wrap), run all 4 x 4 plane products as ONE int8 x int8 -> int32 dot
(tensor cores on GPU), and recombine

    sum_k H_mk C_kc = sum_{s=0..6} 2^(8 s) S_s,     S_s = sum_{a+b=s} P_ab,

where each P_ab = H_a . C_b is exact in int32 while K * 2^14 * 4 < 2^31, and |S_s| < q_l so one
conditional add makes it a residue. Then 6 Shoup multiplications by the constants 2^(8s) mod q_l
and one final reduction. All products are exact: no lazy-reduction bookkeeping, no x64.

The H operand (the hint) is split into planes once, offline: int8[..., 4 M, K] is exactly as
large as the uint32 matrix it replaces.

Two implementations, identical bits: the XLA one above (an int8 dot whose int32 plane products
go to memory, then a fused recombination), and the FFI kernel ``jax_fhe_mod_matmul_planes``
(``ffi/modgemm_cuda.cu``: mma.sync int8 tensor cores with the seven shift sums kept in
registers, so only the planes and the output cross HBM; ``ffi/modgemm_cpu.cc``: exact 128-bit
sums). The kernel (:func:`jax_fhe.ops.mod_matmul_planes`) is opt-in (``fused=True``): on an H100 it
is not faster than the XLA path. First version (rhs split in shared memory):
69.5 ms for the 16 GiB hybrid's batch-32 pack against 34.0 ms; second (rhs split in registers,
no shared memory or barriers): 6.36 vs 5.88 ms at C = 64 and 2.21 vs 1.80 ms at C = 2 on a
quarter of that shape (``benchmarks/bench_modgemm.py``), i.e. about 3.5x its HBM floor: the
mma.sync loop is latency-bound (no shared-memory staging or asynchronous copies yet).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..ops import mod_matmul_planes
from .db_gemm import byte_planes

_U32 = jnp.uint32
#: Whether :func:`mod_matmul` uses the FFI kernel when ``fused`` is not given (read at trace
#: time; a program may set it before jitting).
FUSED_DEFAULT = False
MAX_K = (1 << 31) // (4 * (1 << 14))  # 2^15: four int8 products summed stay exact in int32


def split_planes(x: jax.Array) -> jax.Array:
    """uint32[..., M, K] residues < 2^31 -> int8[..., 4 M, K] (plane a at rows a M .. a M + M - 1)."""
    p = jnp.moveaxis(byte_planes(x), 0, -3)          # [..., 4, M, K]
    return p.reshape(p.shape[:-3] + (4 * p.shape[-2], p.shape[-1]))


def mod_matmul(lhs_planes: jax.Array, rhs: jax.Array, primes, limb_axis: int, *,
               fused: bool | None = None) -> jax.Array:
    """(H . C) mod q_l for stacks of matrices.

    Args:
      lhs_planes: int8[*batch, 4 M, K] from :func:`split_planes` (canonical residues).
      rhs:        uint32[*batch, K, C] canonical residues.
      primes:     the moduli (static tuple), one per entry of batch axis ``limb_axis``.
      limb_axis:  which batch axis indexes the RNS limb.
      fused:      use the FFI kernel (int8 tensor cores, recombination in registers) instead of
                  the XLA dot; default :data:`FUSED_DEFAULT`. Same bits either way.
    Returns uint32[*batch, M, C] in [0, q_l).
    """
    k = rhs.shape[-2]
    if lhs_planes.shape[-1] != k or lhs_planes.shape[-2] % 4:
        raise ValueError(f"mod_matmul: lhs planes {lhs_planes.shape} and rhs {rhs.shape} do not "
                         "form [*, 4M, K] x [*, K, C]")
    if k > MAX_K or 4 * k * (1 << 14) >= min(primes):
        raise ValueError(f"mod_matmul: K = {k} is too large for exact int32 plane sums "
                         f"(need 2^16 K < min q = {min(primes)})")
    if max(primes) >= 1 << 29:
        raise ValueError(f"mod_matmul: moduli must be below 2^29, got {max(primes)}")
    nb = rhs.ndim - 2
    if lhs_planes.ndim != rhs.ndim or not -nb <= limb_axis < nb:
        raise ValueError(f"mod_matmul: batch ranks differ or limb_axis {limb_axis} is out of range")
    limb_axis %= nb
    if rhs.shape[limb_axis] != len(primes):
        raise ValueError(f"mod_matmul: batch axis {limb_axis} has {rhs.shape[limb_axis]} entries but "
                         f"{len(primes)} primes were given")
    if lhs_planes.shape[:nb] != rhs.shape[:nb]:
        raise ValueError(f"mod_matmul: batch shapes differ: {lhs_planes.shape[:nb]} vs {rhs.shape[:nb]}")
    if FUSED_DEFAULT if fused is None else fused:
        return mod_matmul_planes(lhs_planes, rhs, primes, limb_axis)
    m, c = lhs_planes.shape[-2] // 4, rhs.shape[-1]
    rp = jnp.moveaxis(byte_planes(rhs), 0, -2)                      # [*b, K, 4, C]
    rp = rp.reshape(rp.shape[:-2] + (4 * c,))
    if k % 4:  # zero padding keeps K a multiple of 4 (see db_gemm: XLA GPU int8 dots, small K)
        pad = [(0, 0)] * nb
        lhs_planes = jnp.pad(lhs_planes, pad + [(0, 0), (0, -k % 4)])
        rp = jnp.pad(rp, pad + [(0, -k % 4), (0, 0)])
    batch = tuple(range(nb))
    prod = lax.dot_general(lhs_planes, rp, (((nb + 1,), (nb,)), (batch, batch)),
                           preferred_element_type=jnp.int32)       # [*b, 4M, 4C]
    prod = prod.reshape(prod.shape[:-2] + (4, m, 4, c))

    def const(vals):  # per-limb constants shaped to broadcast against [*b, M, C]
        shape = [1] * (nb + 2)
        shape[limb_axis] = len(primes)
        return jnp.asarray(np.asarray(vals, dtype=np.uint32).reshape(shape))

    q = const(primes)
    out = None
    for s in range(7):
        acc = None
        for a in range(max(0, s - 3), min(3, s) + 1):
            t = prod[..., a, :, s - a, :]
            acc = t if acc is None else acc + t
        u = lax.bitcast_convert_type(acc, _U32)
        u = jnp.where(acc < 0, u + q, u)                                # residue in [0, q)
        if s:
            w = [pow(2, 8 * s, p) for p in primes]
            u = _mul_shoup(u, const(w), const([(wi << 32) // p for wi, p in zip(w, primes)]), q)
        out = u if out is None else out + u                             # < 7 q < 2^32
    return out % q


def _mul_shoup(x, w, w_shoup, q):
    """x * w mod q for any uint32 x and constants w < q (Shoup), in [0, q)."""
    r = x * w - lax.mulhi(x, w_shoup) * q
    return jnp.minimum(r, r - q)
