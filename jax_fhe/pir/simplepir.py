"""SimplePIR (Henzinger et al. 2023), the scalar-HE baseline of VIPIR, over Z_{2^32} with p = 2^8.

Layout. ``num_records`` records of ``record_bytes`` bytes fill a D_1 x D_0 byte matrix:
record i sits in column ``col = i % D_0``, slot ``i // D_0``, i.e. rows
[slot * record_bytes, (slot + 1) * record_bytes). D_0 ~ sqrt(total bytes) makes it square-ish.

Protocol (VIPIR §2.5, LWE convention b = Delta * m + e - <a, s>):
  * public:  A = public_matrix(a_seed, D_0, n), a uniform uint32[D_0, n].
  * offline: the server sends the hint H = DB @ A (uint32[D_1, n]).
  * query:   for column c the client samples a fresh ternary s and noise e and sends
             b = Delta * u_c + e - A s (uint32[D_0]); a fresh s per query is required (two
             queries under one s and one A would leak the difference of their one-hots).
  * answer:  the server returns DB @ b (uint32[D_1]), one DB GEMM for the whole batch.
  * decode:  DB @ b + H s = Delta * DB[:, c] + DB @ e; round by Delta to get column c mod 2^8.

The DB is read as int8 by both the hint and the answers (``db_gemm``), so the noise is
DB @ e with |DB| <= 128 (see ``SimplePIRParams.failure_log2``).
"""
from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..lwe import LWE_N1280, HostRandom, LWEParams, public_matrix
from ..rns.progress import progress_bar
from ..rns.pytree import pytree_dataclass, static_field
from .db_gemm import db_gemm

_U32 = jnp.uint32


@dataclasses.dataclass(frozen=True)
class SimplePIRParams:
    """Static description of one SimplePIR instance (hashable: it is pytree metadata).

    Fields: ``lwe`` (p must be 2^8), ``num_records``, ``record_bytes``, ``cols`` (D_0, the query
    length) and ``a_seed`` (public 64-bit seed of A). Derived: ``rows`` (D_1, the answer length).
    """

    lwe: LWEParams
    num_records: int
    record_bytes: int
    cols: int
    a_seed: int

    def __post_init__(self):
        if not isinstance(self.lwe, LWEParams):
            raise TypeError(f"SimplePIRParams: lwe must be LWEParams, got {type(self.lwe).__name__}")
        if self.lwe.log_p != 8:
            raise ValueError(f"SimplePIRParams: DB entries are bytes, so p must be 2^8; got 2^{self.lwe.log_p}")
        for name in ("num_records", "record_bytes", "cols"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"SimplePIRParams: {name} must be a positive int, got {v!r}")
        if not isinstance(self.a_seed, int) or not 0 <= self.a_seed < 1 << 64:
            raise ValueError(f"SimplePIRParams: a_seed must be an int in [0, 2^64), got {self.a_seed!r}")
        if self.failure_log2 > -64:
            raise ValueError(f"SimplePIRParams: cols={self.cols} makes the per-entry decryption failure "
                             f"bound 2^{self.failure_log2:.1f}; need <= 2^-64 (use fewer columns)")

    @property
    def slots(self) -> int:
        """Records per column."""
        return -(-self.num_records // self.cols)

    @property
    def rows(self) -> int:
        """D_1: matrix rows = answer length = slots * record_bytes."""
        return self.slots * self.record_bytes

    @property
    def failure_log2(self) -> float:
        """log2 of a bound on Pr[one answer entry decodes wrongly].

        The answer noise is sum_k d_k e_k with |d_k| <= 128 and e_k independent truncated
        discrete Gaussians, which are sigma-subgaussian (truncating a symmetric law only lowers
        E[cosh(tX)]). So Pr[|noise| >= Delta/2] <= 2 exp(-(Delta/2)^2 / (2 sigma^2 * D_0 * 128^2)).
        (Deterministically |noise| <= 128 * noise_max * D_0, below Delta/2 for D_0 <= 3449.)
        """
        t = self.lwe.delta / 2
        expo = t * t / (2 * self.lwe.sigma ** 2 * self.cols * 128.0 ** 2)
        return 1.0 - expo / math.log(2)

    def locate(self, index: int) -> tuple[int, int]:
        """Record ``index`` -> (first matrix row, column)."""
        index = _check_index(self, index)
        return (index // self.cols) * self.record_bytes, index % self.cols

    @property
    def hint_bytes(self) -> int:
        """Size of the hint H = DB @ A (uint32[D_1, n]) in bytes."""
        return 4 * self.rows * self.lwe.n

    @property
    def query_bytes(self) -> int:
        """Size of one query (uint32[D_0]) in bytes."""
        return 4 * self.cols

    @property
    def answer_bytes(self) -> int:
        """Size of one answer (uint32[D_1]) in bytes."""
        return 4 * self.rows

    def __repr__(self) -> str:
        return (f"SimplePIRParams({self.num_records} records x {self.record_bytes} B, "
                f"matrix {self.rows} x {self.cols}, {self.lwe!r})")


def make_params(num_records: int, record_bytes: int = 1, *, lwe: LWEParams = LWE_N1280,
                cols: int | None = None, a_seed: int | None = None,
                rng: HostRandom | None = None) -> SimplePIRParams:
    """Choose a layout: D_0 = cols (default ceil(sqrt(num_records * record_bytes)) rounded up
    to a multiple of 4, which keeps ``db_gemm`` from padding -- i.e. copying -- the DB) and a
    fresh public seed for A (from ``rng``, default os.urandom) unless given.
    """
    if cols is None:
        total = max(1, int(num_records) * int(record_bytes))
        cols = -(-(math.isqrt(total - 1) + 1) // 4) * 4
    if a_seed is None:
        a_seed = (rng if rng is not None else HostRandom()).seed64()
    return SimplePIRParams(lwe=lwe, num_records=int(num_records), record_bytes=int(record_bytes),
                           cols=int(cols), a_seed=int(a_seed))


@pytree_dataclass
class ServerDB:
    """The server's state. Leaf ``db``: int8[D_1, D_0] (record bytes, bitcast). Static: params."""

    db: jax.Array
    params: SimplePIRParams = static_field()


@pytree_dataclass
class Hint:
    """Offline download for clients. Leaf ``h``: uint32[D_1, n] = DB @ A mod 2^32. Static: params."""

    h: jax.Array
    params: SimplePIRParams = static_field()


@pytree_dataclass
class Query:
    """What a client sends. Leaf ``b``: uint32[B, D_0] (one row per query). Static: params."""

    b: jax.Array
    params: SimplePIRParams = static_field()


@pytree_dataclass
class QuerySecret:
    """What the client keeps. Leaves ``s``: int8[B, n] (fresh ternary secrets), ``index``:
    int32[B] (record indices). Static: params."""

    s: jax.Array
    index: jax.Array
    params: SimplePIRParams = static_field()

    def __repr__(self) -> str:  # never print the secrets
        return f"QuerySecret(B={self.s.shape[0]}, {self.params!r})"


@pytree_dataclass
class Answer:
    """What the server returns. Leaf ``b``: uint32[B, D_1] (= DB @ query). Static: params."""

    b: jax.Array
    params: SimplePIRParams = static_field()


def encode_database(params: SimplePIRParams, records) -> np.ndarray:
    """Lay out records (uint8/int8[num_records, record_bytes], or [num_records] when
    record_bytes == 1) as the int8[D_1, D_0] matrix; padding slots are zero."""
    _check_params(params, "encode_database")
    rec = np.asarray(records)
    if rec.dtype not in (np.uint8, np.int8):
        raise TypeError(f"encode_database: records must be uint8 or int8 bytes, got dtype {rec.dtype}")
    if rec.ndim == 1 and params.record_bytes == 1:
        rec = rec[:, None]
    want = (params.num_records, params.record_bytes)
    if rec.shape != want:
        raise ValueError(f"encode_database: records must have shape {want} (num_records, record_bytes)"
                         + (" or (num_records,)" if params.record_bytes == 1 else "") + f", got {rec.shape}")
    padded = np.zeros((params.slots * params.cols, params.record_bytes), dtype=np.int8)
    padded[: params.num_records] = rec.view(np.int8)
    # [slot, col, byte] -> rows slot * record_bytes + byte, column col
    return padded.reshape(params.slots, params.cols, params.record_bytes).transpose(0, 2, 1).reshape(
        params.rows, params.cols)


def server_setup(params: SimplePIRParams, records, *, progress: bool | None = None,
                 chunk_rows: int = 4096) -> tuple[ServerDB, Hint]:
    """Encode the records, put the DB on the device and compute the hint DB @ A.

    ``records``: uint8[num_records, record_bytes]. Returns (ServerDB, Hint). The hint is built
    ``chunk_rows`` rows at a time (uint32[chunk_rows, n] per step) with a tqdm bar when
    ``progress`` is True (None: only when there is more than one chunk).
    """
    server = ServerDB(db=jnp.asarray(encode_database(params, records)), params=params)
    return server, compute_hint(server, progress=progress, chunk_rows=chunk_rows)


def compute_hint(server: ServerDB, *, progress: bool | None = None, chunk_rows: int = 4096) -> Hint:
    """H = DB @ A mod 2^32: uint32[D_1, n], computed in row chunks (see ``server_setup``)."""
    _check_server(server, "compute_hint")
    params = server.params
    a = public_a(params)
    rows = params.rows
    chunk = max(1, min(int(chunk_rows), rows))
    starts = range(0, rows, chunk)
    parts = []
    for r0 in progress_bar(starts, progress, auto=len(starts) > 1, desc="SimplePIR hint", unit="chunk"):
        block = server.db[r0:r0 + chunk]
        if block.shape[0] < chunk:  # pad the tail so every chunk reuses one compiled GEMM
            block = jnp.pad(block, ((0, chunk - block.shape[0]), (0, 0)))
        parts.append(_hint_chunk(block, a)[: rows - r0])
    return Hint(h=jnp.concatenate(parts) if len(parts) > 1 else parts[0], params=params)


_hint_chunk = jax.jit(lambda block, a: db_gemm(block, a, method="gemm"))


def public_a(params: SimplePIRParams) -> jax.Array:
    """The public matrix A: uint32[D_0, n], derived from ``params.a_seed``."""
    _check_params(params, "public_a")
    return public_matrix(params.a_seed, params.cols, params.lwe.n)


def client_query(params: SimplePIRParams, indices, rng: HostRandom | None = None, *,
                 a: jax.Array | None = None) -> tuple[Query, QuerySecret]:
    """Queries for record ``indices`` (an int or a sequence of B ints in [0, num_records)).

    Samples a fresh ternary secret int8[B, n] and noise for each query from ``rng`` (default:
    os.urandom). ``a`` may pass a precomputed ``public_a(params)`` to save regenerating it.
    Returns (Query with b: uint32[B, D_0], QuerySecret to keep for ``decode``).
    """
    _check_params(params, "client_query")
    idx = np.asarray([_check_index(params, i) for i in _as_index_list(indices)], dtype=np.int32)
    if rng is not None and not isinstance(rng, HostRandom):
        raise TypeError(f"client_query: rng must be a HostRandom or None, got {type(rng).__name__}")
    rng = HostRandom() if rng is None else rng
    if a is None:
        a = public_a(params)
    elif getattr(a, "shape", None) != (params.cols, params.lwe.n) or np.dtype(a.dtype) != np.uint32:
        raise ValueError(f"client_query: a must be public_a(params), uint32[{params.cols}, {params.lwe.n}]")
    lwe = params.lwe
    s = jnp.asarray(rng.ternary((idx.size, lwe.n)))
    e = jnp.asarray(rng.gaussian((idx.size, params.cols), lwe.sigma, lwe.tail))
    b = onehot_query_b(a, s, e, jnp.asarray(idx % params.cols), params.cols, lwe.delta)
    return Query(b=b, params=params), QuerySecret(s=s, index=jnp.asarray(idx), params=params)


@functools.partial(jax.jit, static_argnums=(4, 5))
def onehot_query_b(a, s, e, col, cols, delta):
    """The b-parts uint32[B, cols] of LWE encryptions of one-hot rows (Delta at column col[i])
    under secrets s int[B, n] with noise e int[B, cols] and the public matrix a uint32[cols, n]."""
    a_s = db_gemm(s, a.T)                                           # uint32[B, D_0] = (A s)^T
    onehot = (jnp.arange(cols, dtype=jnp.int32)[None, :] == col[:, None]).astype(_U32)
    return onehot * _U32(delta) + lax.bitcast_convert_type(e, _U32) - a_s


@jax.jit
def answer(server: ServerDB, query: Query) -> Answer:
    """The server's online step for a batch: Answer.b = (DB @ query.b^T)^T, uint32[B, D_1].

    One DB GEMM for all B queries. Jitted; checks run at trace time.
    """
    _check_server(server, "answer")
    if not isinstance(query, Query):
        raise TypeError(f"answer: expected a Query (from client_query), got {type(query).__name__}")
    params = server.params
    if query.params != params:
        raise ValueError(f"answer: query was built for {query.params!r} (a_seed={query.params.a_seed}) "
                         f"but this server holds {params!r} (a_seed={params.a_seed})")
    b = query.b
    if np.dtype(b.dtype) != np.uint32 or b.ndim != 2 or b.shape[1] != params.cols:
        raise ValueError(f"answer: query.b must be uint32[B, D_0={params.cols}], got "
                         f"{np.dtype(b.dtype).name}{list(b.shape)}")
    return Answer(b=db_gemm(server.db, b.T).T, params=params)


def client_phase(hint: Hint, secret: QuerySecret, ans: Answer) -> jax.Array:
    """Answer + H s per query: uint32[B, D_1] = Delta * DB[:, col] + DB @ e (mod 2^32)."""
    _check_decode(hint, secret, ans)
    return ans.b + db_gemm(secret.s, hint.h.T)       # H s for every query at once: [B, D_1]


def decode(hint: Hint, secret: QuerySecret, ans: Answer) -> jax.Array:
    """Recover the queried records: uint8[B, record_bytes]."""
    ph = client_phase(hint, secret, ans)
    params = hint.params
    shift = 32 - params.lwe.log_p
    first = (secret.index // params.cols) * params.record_bytes
    rows = first[:, None] + jnp.arange(params.record_bytes, dtype=jnp.int32)[None, :]
    picked = jnp.take_along_axis(ph, rows, axis=1)
    return ((picked + _U32(1 << (shift - 1))) >> shift).astype(jnp.uint8)  # round(phase / Delta)


def _as_index_list(indices):
    if isinstance(indices, (bool, np.bool_)):
        raise TypeError("client_query: indices must be ints, got a bool")
    arr = np.asarray(indices)
    if arr.ndim == 0:
        arr = arr[None]
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"client_query: indices must be an int or a non-empty 1-D sequence, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"client_query: indices must be integers, got dtype {arr.dtype}")
    return [int(i) for i in arr]


def _check_index(params, index) -> int:
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"record index must be an int, got {type(index).__name__}")
    index = int(index)
    if not 0 <= index < params.num_records:
        raise ValueError(f"record index {index} is out of range [0, {params.num_records})")
    return index


def _check_params(params, what):
    if not isinstance(params, SimplePIRParams):
        raise TypeError(f"{what}: expected SimplePIRParams (jax_fhe.pir.simplepir.make_params), "
                        f"got {type(params).__name__}")


def _check_server(server, what):
    if not isinstance(server, ServerDB):
        raise TypeError(f"{what}: expected a ServerDB (from server_setup), got {type(server).__name__}")
    want = (server.params.rows, server.params.cols)
    if server.db.shape != want or np.dtype(server.db.dtype) != np.int8:
        raise ValueError(f"{what}: server.db must be int8{list(want)}, got "
                         f"{np.dtype(server.db.dtype).name}{list(server.db.shape)}")


def _check_decode(hint, secret, ans):
    for x, cls in ((hint, Hint), (secret, QuerySecret), (ans, Answer)):
        if not isinstance(x, cls):
            raise TypeError(f"decode: expected a {cls.__name__}, got {type(x).__name__}")
    params = hint.params
    for x, name in ((secret, "query secret"), (ans, "answer")):
        if x.params != params:
            raise ValueError(f"decode: the {name} is for {x.params!r} (a_seed={x.params.a_seed}) but the "
                             f"hint is for {params!r} (a_seed={params.a_seed})")
    if hint.h.shape != (params.rows, params.lwe.n):
        raise ValueError(f"decode: hint.h must be uint32[{params.rows}, {params.lwe.n}], got {list(hint.h.shape)}")
    batch = secret.s.shape[0]
    if ans.b.shape != (batch, params.rows):
        raise ValueError(f"decode: answer.b must be uint32[B={batch}, D_1={params.rows}] to match the "
                         f"{batch} queries, got {list(ans.b.shape)}")
