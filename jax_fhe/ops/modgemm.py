"""The PIR packing GEMM's FFI kernel: modular matrix products from int8 byte planes."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

_U32 = jnp.uint32


def mod_matmul_planes(lhs_planes, rhs, primes, limb_axis: int) -> jax.Array:
    """(H . C) mod q_l by the FFI kernel ``jax_fhe_mod_matmul_planes`` (int8 tensor cores on the
    GPU, exact 128-bit sums on the CPU): lhs_planes int8[*batch, 4 M, K] (byte planes of
    canonical residues), rhs uint32[*batch, K, C], ``primes`` one per entry of batch axis
    ``limb_axis`` (validated by the caller, :func:`jax_fhe.pir.modgemm.mod_matmul`). Returns
    uint32[*batch, M, C]. Moduli are broadcast to one per batch entry (uint32[*batch]); the kernel takes
    the rhs transposed ([*batch, C, K], K-contiguous like the planes), which XLA fuses into the
    transpose that produces ``rhs``."""
    nb = rhs.ndim - 2
    k = rhs.shape[-2]
    if k % 4:  # the kernel reads 4-byte groups of a plane row; zero columns change nothing
        pad = [(0, 0)] * nb
        lhs_planes = jnp.pad(lhs_planes, pad + [(0, 0), (0, -k % 4)])
        rhs = jnp.pad(rhs, pad + [(0, -k % 4), (0, 0)])
    shape = [1] * nb
    shape[limb_axis] = len(primes)
    moduli = jnp.broadcast_to(jnp.asarray(np.asarray(primes, dtype=np.uint32).reshape(shape)), rhs.shape[:nb])
    out = jax.ShapeDtypeStruct(rhs.shape[:nb] + (lhs_planes.shape[-2] // 4, rhs.shape[-1]), _U32)
    call = jax.ffi.ffi_call("jax_fhe_mod_matmul_planes", out, vmap_method="broadcast_all")
    return call(lhs_planes.astype(jnp.int8), jnp.swapaxes(rhs.astype(_U32), -1, -2), moduli)
