"""Host-side precomputation helpers for the 32-bit modular arithmetic of the kernels."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .pytree import host_u32


def device_u32(values) -> jax.Array:
    """Upload host table values (Python ints or numpy integers in [0, 2^32)) as uint32 on the
    default device. Values are staged through uint64, so Python ints up to 2^32 - 1 are exact."""
    return jnp.asarray(host_u32(values))   # the same staging as the host tables


def shoup(w, q):
    """Shoup companion floor(w * 2^32 / q) of constants w < q (numpy, exact in uint64)."""
    w = np.asarray(w, dtype=np.uint64)
    q = np.asarray(q, dtype=np.uint64)
    if np.any(w >= q):
        raise ValueError("Shoup constants must be reduced (w < q)")
    return ((w << np.uint64(32)) // q).astype(np.uint32)


def bit_reverse_permutation(n: int) -> np.ndarray:
    """Indices brev_{log2 n}(k) for k in [0, n)."""
    log_n = n.bit_length() - 1
    k = np.arange(n, dtype=np.uint32)
    r = np.zeros(n, dtype=np.uint32)
    for b in range(log_n):
        r |= ((k >> np.uint32(b)) & np.uint32(1)) << np.uint32(log_n - 1 - b)
    return r


def powers_mod(base: int, n: int, q: int) -> np.ndarray:
    """[base^0, ..., base^(n-1)] mod q as uint64 (exact: products stay below 2^62)."""
    out = np.ones(1, dtype=np.uint64)
    qq = np.uint64(q)
    while out.size < n:
        step = pow(int(base), out.size, int(q))
        out = np.concatenate([out, (out * np.uint64(step)) % qq])
    return out[:n]
