"""Randomness for LWE: secret material on the host, public matrices from a public seed.

* Secrets and noise come from :class:`HostRandom`. By default it reads ``os.urandom`` (the OS
  CSPRNG). ``HostRandom.insecure_deterministic(seed)`` is a reproducible stream for tests only:
  anyone who knows the seed knows every secret it produced.
* Noise is the *discrete* Gaussian D_{Z, sigma} (weights exp(-k^2 / (2 sigma^2))) truncated to
  |k| <= floor(tail * sigma), sampled by inversion of its cumulative table with 53-bit uniforms
  (the table is exact up to 2^-53 per entry). The sampler is numpy, not constant-time: it runs
  on the client's host, not on a shared server.
* Public uniform matrices (the LWE ``A``) use ``jax.random`` keyed by a public 64-bit seed, so
  server and client derive the same matrix on any backend.
"""
from __future__ import annotations

import math
import os

import jax
import jax.numpy as jnp
import numpy as np


class HostRandom:
    """A source of secret randomness on the host (numpy arrays out).

    ``HostRandom()`` is cryptographically secure (``os.urandom``). Use
    ``HostRandom.insecure_deterministic(seed)`` only in tests.
    """

    def __init__(self):
        self._rng = None  # None: os.urandom; otherwise a seeded numpy Generator (insecure)

    @classmethod
    def insecure_deterministic(cls, seed: int) -> "HostRandom":
        """A reproducible stream from ``seed``. INSECURE: for tests and debugging only."""
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"insecure_deterministic: seed must be an int, got {type(seed).__name__}")
        out = cls()
        out._rng = np.random.default_rng(int(seed))
        return out

    @property
    def secure(self) -> bool:
        return self._rng is None

    def __repr__(self) -> str:
        return "HostRandom(os.urandom)" if self.secure else "HostRandom(INSECURE deterministic seed)"

    def bytes(self, count: int) -> bytes:
        """``count`` random bytes."""
        return os.urandom(count) if self._rng is None else self._rng.bytes(count)

    def uint64(self, shape) -> np.ndarray:
        """Uniform uint64 array of ``shape``."""
        size = int(np.prod(shape, dtype=np.int64))
        return np.frombuffer(self.bytes(8 * size), dtype=np.uint64).reshape(shape)

    def seed64(self) -> int:
        """A uniform 64-bit integer (e.g. a fresh seed for a public matrix)."""
        return int(self.uint64(())[()])

    def ternary(self, shape) -> np.ndarray:
        """Uniform {-1, 0, 1} as int8[shape]."""
        size = int(np.prod(shape, dtype=np.int64))
        out = np.empty(0, dtype=np.uint8)
        while out.size < size:  # rejection of byte 255 makes byte % 3 exactly uniform
            raw = np.frombuffer(self.bytes(size + size // 64 + 16), dtype=np.uint8)
            out = np.concatenate([out, raw[raw < 255]])
        return ((out[:size] % 3).astype(np.int8) - 1).reshape(shape)

    def gaussian(self, shape, sigma: float, tail: float) -> np.ndarray:
        """Truncated discrete Gaussian, int32[shape], |values| <= floor(tail * sigma)."""
        thresholds, bound = _gaussian_table(float(sigma), float(tail))
        u = self.uint64(shape) >> np.uint64(11)  # 53-bit uniforms in [0, 2^53)
        return (np.searchsorted(thresholds, u, side="right") - bound).astype(np.int32)


_TABLES: dict = {}


def _gaussian_table(sigma: float, tail: float):
    """Cumulative table of D_{Z,sigma} on [-B, B] scaled to 2^53, as uint64 thresholds."""
    key = (sigma, tail)
    if key not in _TABLES:
        bound = math.floor(tail * sigma)
        k = np.arange(-bound, bound + 1, dtype=np.float64)
        w = np.exp(-(k * k) / (2.0 * sigma * sigma))
        cdf = np.cumsum(w) / w.sum()
        # u in [t_{j-1}, t_j) maps to k_j (searchsorted 'right' counts thresholds <= u), so
        # k_j has probability (t_j - t_{j-1}) / 2^53. The last cdf entry (1.0) is dropped:
        # every u >= t_{2B-1} maps to +B.
        thresholds = np.round(cdf[:-1] * 2.0**53).astype(np.uint64)
        _TABLES[key] = (thresholds, bound)
    return _TABLES[key]


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
