"""The PIR database GEMM: int8 DB [M, K] times uint32 queries [K, B], mod 2^32.

VIPIR §4.1: split every 32-bit query word into four byte planes, run INT8 x INT8 -> INT32
products (tensor cores on GPU), and recombine with shifts; the reduction mod 2^32 is free because
int32 accumulators wrap. Here the four planes are concatenated along the batch axis so the
database -- the big operand -- is streamed once by a single dot of width 4B.

Signedness of the query planes (the subtle part). The int8 dot reads each plane entry as a
*signed* value in [-128, 127], but the bytes b_i of a word x = sum_i 2^(8i) b_i are unsigned
in [0, 255]. Feeding b_i bitcast to int8 would silently subtract 256 * [b_i >= 128] and
corrupt the result by sum_i 2^(8i+8) * (DB @ [b_i >= 128]), which is nonzero mod 2^32 for
i < 3. Instead we recode x into *balanced* base-256 digits c_i in [-128, 127]:

    z   = x + 0x80808080            (mod 2^32)
    c_i = byte_i(z) - 128           (int8)

Then sum_i 2^(8i) c_i = z - 128 * (1 + 2^8 + 2^16 + 2^24) = z - 0x80808080 = x (mod 2^32);
a carry out of the top byte of z is a multiple of 2^32 and vanishes. So
DB @ x = sum_i 2^(8i) (DB @ c_i) (mod 2^32) exactly, with no correction term: two cheap
element-wise ops per query word (the analogue of the paper's prmt byte extraction).

Signedness of the DB. The DB is int8 (two's complement, [-128, 127]); a uint8 DB is bitcast
to int8 (same bits). For PIR only the value mod 2^8 matters for the Delta * d term, and the
signed reading keeps the noise DB @ e smallest; the hint and the answers must simply use the
same reading, which they do when both go through this module. ``db_signed=False`` gives the
unsigned reading d_u = (d_u - 128) + 128 instead: the DB operand becomes d_u XOR 0x80 (as
int8) and the output gets + 128 * sum_k x_k (a per-column term).

K may be as large as you like: each int32 plane accumulator may overflow (|c d| <= 2^14, so
K >= 2^17 can exceed 2^31), and it wraps mod 2^32, which is exactly what we want; the uint32
shift-add then keeps everything mod 2^32.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_U32 = jnp.uint32
METHODS = ("auto", "gemm", "gemv")


def db_gemm(db, query, *, method: str = "auto", db_signed: bool = True) -> jax.Array:
    """DB @ query mod 2^32.

    Args:
      db:     int8[M, K] (or uint8[M, K], bitcast to int8 when ``db_signed``).
      query:  uint32[K, B] or uint32[K] (a single vector).
      method: "gemm" (four int8 byte-plane dots; tensor cores on GPU), "gemv" (B = 1 only: a
              fused uint32 multiply-reduce streaming the DB once on CUDA/CPU cores, the paper's
              batch-1 design), or "auto" (currently always "gemm": measured faster than "gemv"
              even at B = 1 -- 1.87 vs 2.27 ms for a 4 GiB DB on an H100, 1.30x and 1.58x the
              HBM-read floor; 20-40x faster on CPU).
      db_signed: read DB bytes as int8 in [-128, 127] (default) or as uint8 in [0, 255].
    Returns:
      uint32[M, B] (uint32[M] for a vector query): sum_k db[m, k] * query[k, b] mod 2^32.
    """
    db, query, vector = _check(db, query, method)
    if vector:
        query = query[:, None]
    if db_signed:
        db = db if db.dtype == jnp.int8 else lax.bitcast_convert_type(db, jnp.int8)
        correction = None
    else:
        # d_u = s + 128 with s = d_u - 128 in [-128, 127], i.e. the bits of d_u XOR 0x80.
        db_u8 = db if db.dtype == jnp.uint8 else lax.bitcast_convert_type(db, jnp.uint8)
        db = lax.bitcast_convert_type(db_u8 ^ jnp.uint8(0x80), jnp.int8)
        correction = jnp.sum(query, axis=0, dtype=_U32) << 7  # 128 * sum_k x_k
    out = _gemv(db, query) if method == "gemv" else _gemm(db, query)
    if correction is not None:
        out = out + correction[None, :]
    return out[:, 0] if vector else out


def byte_planes(query: jax.Array) -> jax.Array:
    """Balanced base-256 digits of uint32[..., K] words as int8[4, ..., K].

    sum_i 2^(8i) * planes[i] == query (mod 2^32), with every digit in [-128, 127].
    """
    z = query + _U32(0x80808080)
    return jnp.stack([(((z >> (8 * i)) & _U32(0xFF)).astype(jnp.int32) - 128).astype(jnp.int8)
                      for i in range(4)])


def _gemm(db, query):
    m, k, b = db.shape[0], db.shape[1], query.shape[1]
    planes = byte_planes(query.T)                       # int8[4, B, K], K contiguous
    planes = planes.reshape(4 * b, k)                   # one dot of width 4B reads the DB once
    if k % 4:
        # XLA's GPU int8 GEMM (Triton, jax 0.11.2 on H100) returns wrong sums for K < 64 with
        # K % 4 != 0 (seen for K = 2, 3, 5..15, 33..63 not multiples of 4). Zero columns do not
        # change the product, so pad K to a multiple of 4. This copies the DB: keep K % 4 == 0
        # for large databases (SimplePIR's layout does).
        db = jnp.pad(db, ((0, 0), (0, -k % 4)))
        planes = jnp.pad(planes, ((0, 0), (0, -k % 4)))
    acc = lax.dot_general(db, planes, (((1,), (1,)), ((), ())),
                          preferred_element_type=jnp.int32)      # int32[M, 4B], wraps mod 2^32
    acc = lax.bitcast_convert_type(acc, _U32).reshape(m, 4, b)
    shifts = jnp.array([0, 8, 16, 24], dtype=_U32)[None, :, None]
    return jnp.sum(acc << shifts, axis=1, dtype=_U32)


def _gemv(db, query):
    # Plain 32-bit multiply-accumulate: int8 -> int32 is exact, int32 -> uint32 is a bitcast
    # (two's complement = value mod 2^32), and uint32 products/sums wrap mod 2^32. The
    # reduction is split explicitly into chunks of up to 4096 along K: one reduce over K = 2^16
    # was left unfused by XLA on GPU, which then materialized the widened uint32 DB (4x the DB,
    # out of memory at 4 GiB). With the split, the widening fuses into the first reduce and the
    # DB is read once as int8.
    m, k = db.shape
    chunk = math.gcd(k, _GEMV_CHUNK)
    d = lax.bitcast_convert_type(db.astype(jnp.int32), _U32).reshape(m, k // chunk, chunk)
    x = query[:, 0].reshape(k // chunk, chunk)
    partial = jnp.sum(d * x[None], axis=2, dtype=_U32)              # uint32[M, K / chunk]
    return jnp.sum(partial, axis=1, dtype=_U32)[:, None]


_GEMV_CHUNK = 4096


def _check(db, query, method):
    if method not in METHODS:
        raise ValueError(f"db_gemm: method must be one of {METHODS}, got {method!r}")
    for x, what, want in ((db, "db", "int8 or uint8"), (query, "query", "uint32")):
        if getattr(x, "dtype", None) is None:
            raise TypeError(f"db_gemm: {what} must be a {want} array, got {type(x).__name__}")
    if np.dtype(db.dtype) not in (np.int8, np.uint8):
        raise TypeError(f"db_gemm: db must be int8 or uint8 (bytes mod 2^8), got {np.dtype(db.dtype)}")
    if np.dtype(query.dtype) != np.uint32:
        raise TypeError(f"db_gemm: query must be uint32 (words mod 2^32), got {np.dtype(query.dtype)}")
    if db.ndim != 2:
        raise ValueError(f"db_gemm: db must have shape [M, K], got {db.shape}")
    if query.ndim not in (1, 2):
        raise ValueError(f"db_gemm: query must have shape [K, B] or [K], got {query.shape}")
    if query.shape[0] != db.shape[1]:
        raise ValueError(f"db_gemm: query has K={query.shape[0]} rows but db has K={db.shape[1]} "
                         f"columns (db [M, K] @ query [K, B])")
    vector = query.ndim == 1
    if method == "gemv" and not vector and query.shape[1] != 1:
        raise ValueError(f"db_gemm: method='gemv' needs a single query (B = 1), got B={query.shape[1]}")
    return jnp.asarray(db), jnp.asarray(query), vector
