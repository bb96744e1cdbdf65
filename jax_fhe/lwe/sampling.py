"""Randomness for LWE: secret material on the host, public matrices from a public seed.

HostRandom (secrets and noise) lives in :mod:`jax_fhe.rns.sampling`; it is re-exported here.

* Public uniform matrices (the LWE ``A``) use ``jax.random`` keyed by a public 64-bit seed, so
  server and client derive the same matrix on any backend.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..rns.sampling import HostRandom  # noqa: F401  (re-export)


def public_matrix(seed: int, rows: int, cols: int) -> jax.Array:
    """Uniform uint32[rows, cols] derived from a public 64-bit ``seed`` (deterministic).

    The matrix is ``jax.random.bits`` of a threefry2x32 key whose data is (seed >> 32,
    seed & 0xffffffff), generated with ``jax_threefry_partitionable`` pinned on so that the
    bits do not depend on the user's JAX config. Client and server must run JAX versions with
    the same threefry stream (true for all versions that default to partitionable threefry).
    """
    seed = _check_seed(seed)
    rows, cols = int(rows), int(cols)
    if rows < 1 or cols < 1:
        raise ValueError(f"public_matrix: shape must be positive, got ({rows}, {cols})")
    data = jnp.asarray(np.array([seed >> 32, seed & 0xFFFFFFFF], dtype=np.uint32))
    key = jax.random.wrap_key_data(data, impl="threefry2x32")
    with jax.threefry_partitionable(True):
        return jax.random.bits(key, (rows, cols), dtype=jnp.uint32)


def _check_seed(seed) -> int:
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"public seed must be an int in [0, 2^64), got {type(seed).__name__}")
    seed = int(seed)
    if not 0 <= seed < 1 << 64:
        raise ValueError(f"public seed must be in [0, 2^64), got {seed}")
    return seed
