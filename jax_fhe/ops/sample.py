"""Small signed polynomials (ternary, discrete Gaussian) and uniform residues drawn on the device
as XLA FFI primitives, from a 256-bit key the host draws from os.urandom.

The kernel expands the key with ChaCha20 (RFC 8439) and maps each 53-bit keystream value u to
#{k : thresholds[k] <= u} - bound by a full scan of the table (constant time): inversion of the
distribution's cumulative table, the method ``HostRandom.gaussian`` uses on the host. CPU and
CUDA kernels give the same bits; the reference is ``tests/reference.py``'s ChaCha20. Uniform
residues take the 64-bit keystream words reduced mod each limb's prime, as
``HostRandom.uniform_mod`` reduces host words (within 2^-32 of uniform per value)."""
from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from ..rns.sampling import SmallTable
from ._checks import as_context, limb_constants


def _check_key(key, what: str) -> jax.Array:
    dtype = getattr(key, "dtype", None)
    if dtype is None or np.dtype(dtype) != np.uint32 or tuple(key.shape) != (8,):
        got = type(key).__name__ if dtype is None else f"{np.dtype(dtype)}{list(key.shape)}"
        raise TypeError(f"{what}: the key must be uint32[8] (HostRandom.device_key()), got {got}")
    return jnp.asarray(key)


def _check_stream(stream, what: str) -> np.int64:
    if isinstance(stream, bool) or not isinstance(stream, (int, np.integer)) or not 0 <= int(stream) < 1 << 32:
        raise ValueError(f"{what}: stream must be an int in [0, 2^32), got {stream!r}")
    return np.int64(stream)


def sample_small(key, shape, table: SmallTable, stream: int = 0) -> jax.Array:
    """int32[*shape] drawn from ``table`` (:func:`jax_fhe.rns.gaussian_table`,
    :data:`jax_fhe.rns.TERNARY`) with the ChaCha20 stream ``stream`` (in [0, 2^32)) of ``key``
    (uint32[8]). One key draws several independent polynomials, one stream each; never reuse a
    (key, stream) pair for two secrets. Jittable; not vmappable (draw one batched shape instead)."""
    key = _check_key(key, "sample_small")
    if not isinstance(table, SmallTable):
        raise TypeError(f"sample_small: table must be a jax_fhe.rns.SmallTable, got {type(table).__name__}")
    stream = _check_stream(stream, "sample_small")
    shape = tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"sample_small: negative dimension in shape {shape}")
    if int(np.prod(shape, dtype=np.int64)) > 1 << 35:
        raise ValueError(f"sample_small: more than 2^35 values from one stream ({shape})")
    call = jax.ffi.ffi_call("jax_fhe_sample_small", jax.ShapeDtypeStruct(shape, jnp.int32))
    return call(key, stream=stream, bound=np.int64(table.bound),
                thresholds=np.asarray(table.thresholds, dtype=np.int64))


def sample_uniform(key, batch, ctx, rows=None, stream: int = 0) -> jax.Array:
    """uint32[*batch, L, N]: uniform residues on ``rows`` of ``ctx`` (default: every prime),
    from the ChaCha20 stream ``stream`` of ``key`` (uint32[8]), value j the keystream's 64-bit
    word j mod its limb's prime. Jittable; not vmappable."""
    key = _check_key(key, "sample_uniform")
    ctx = as_context(ctx, "sample_uniform")
    stream = _check_stream(stream, "sample_uniform")
    rows = None if rows is None else tuple(rows)
    rows = ctx.rows_for(len(ctx.primes) if rows is None else len(rows), rows)
    batch = tuple(operator.index(b) for b in batch)
    if any(b < 0 for b in batch):
        raise ValueError(f"sample_uniform: negative dimension in batch {batch}")
    shape = batch + (len(rows), ctx.n)
    if int(np.prod(shape, dtype=np.int64)) > 1 << 35:
        raise ValueError(f"sample_uniform: more than 2^35 values from one stream ({shape})")
    call = jax.ffi.ffi_call("jax_fhe_sample_uniform", jax.ShapeDtypeStruct(shape, jnp.uint32))
    return call(key, limb_constants(ctx.moduli, ctx, rows), stream=stream)
