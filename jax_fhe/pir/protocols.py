"""VIPIR's hintless protocols: ExpPack(S), Hybrid and Double-packing (arXiv:2606.11536 §3).

All three share the database layout and the first two steps:

  DB: int8[blocks * N, D_0]. Hybrid and double-packing hold blocks * D_0 records of N bytes:
      record i = (block r = i // D_0, column c = i % D_0) fills rows r N .. r N + N - 1 of
      column c. ExpPack(S) holds D_0 records (columns) of blocks * N bytes (SimplePIR layout).
  (1) first fold: one DB GEMM for the batch, y = DB @ b (b: one-hot LWE query of column c).
  (3) ExpPack: expand the client's ct_ExpPack into the n special ciphertexts (plus, for the
      hybrid, the RGSW selector rows) and pack the blocks LWE answers into blocks RLWE
      ciphertexts with the offline hint planes (H . C + (Delta G | 0)), in (b, a) order.
Then
  ExpPack(S):     switch all blocks ciphertexts to q_0 and return them.
  Hybrid:         log2(blocks) CMUX levels (RGSW x RLWE) select block r; switch; return 1.
  Double-packing: switch to q_0, reinterpret each ciphertext as 8 N bytes, fold them with a
                  second one-hot LWE query over the blocks (same LWE secret, public A_2),
                  pack the 8 N LWE answers into 8 RLWE ciphertexts reusing the same special
                  ciphertexts, switch, return 8.

The client keeps one long-term RLWE key (its public expansion keys, plus the hybrid's RGSW(s)
conversion key, are uploaded once); each query uses a fresh ternary LWE secret, carried by
its ct_ExpPack. Server answers for a batch are one jitted call.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..lwe import LWE_N1280, LWEParams, public_matrix
from ..ops import ntt
from ..rlwe import rgsw
from ..rns import HostRandom, progress_bar
from ..rns.pytree import pytree_dataclass, static_field
from . import exppack as ep
from . import ring as rg
from .db_gemm import db_gemm
from .ring import RING_N4096, RingKey, RingParams, RingTables
from .simplepir import onehot_query_b

_U32 = jnp.uint32
PROTOCOLS = ("exppack", "hybrid", "double")
KIB = 1024


@dataclasses.dataclass(frozen=True)
class Chunking:
    """How a server holds its DB and hint and runs an answer, so that its peak memory fits a
    device (chosen by :func:`jax_fhe.pir.memory.plan`; hashable: a static jit argument).

    db_chunks:     the DB is held as this many row chunks (separate device buffers). Each first
                   fold GEMM then reads one chunk, so XLA's GEMM autotuner copies a chunk, not
                   the DB; the DB is built chunk by chunk (never a second whole copy).
    plane_chunks:  the hint planes are held as this many chunks of slots (N / plane_chunks each),
                   for the same reason (the packing GEMM's operand).
    expand_stream: queries expanded together (None: :data:`EXPAND_STREAM`).
    stream:        queries in the protocol's second stage together (None: :data:`STREAM`).
    pack_temp_bytes: bound on the packing GEMM's int32 plane products alive at once (None:
                   ``exppack.PACK_TEMP_BYTES``).
    """

    db_chunks: int = 1
    plane_chunks: int = 1
    expand_stream: int | None = None
    stream: int | None = None
    pack_temp_bytes: int | None = None

    def __post_init__(self):
        for name in ("db_chunks", "plane_chunks", "expand_stream", "stream", "pack_temp_bytes"):
            v = getattr(self, name)
            if v is None and name not in ("db_chunks", "plane_chunks"):
                continue
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"Chunking: {name} must be a positive int, got {v!r}")
            object.__setattr__(self, name, int(v))


@dataclasses.dataclass(frozen=True)
class VIPIRParams:
    """One protocol instance (hashable: pytree metadata).

    protocol: "exppack" (ExpPack(S)), "hybrid" or "double" (double-packing).
    lwe, ring: the LWE (n, p = 2^8) and RLWE (N, Q, p = 2^18) parameter sets.
    blocks:   number of N-row blocks (Dr for hybrid, D_1 for double, D_1 / N for ExpPack(S)).
    cols:     D_0, the first query's length.
    a_seed, a2_seed: public seeds of A (D_0 x n) and, for double-packing, A_2 (blocks x n).
    """

    protocol: str
    lwe: LWEParams
    ring: RingParams
    blocks: int
    cols: int
    a_seed: int
    a2_seed: int = 0

    def __post_init__(self):
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"VIPIRParams: protocol must be one of {PROTOCOLS}, got {self.protocol!r}")
        if not isinstance(self.lwe, LWEParams) or self.lwe.log_p != 8:
            raise ValueError("VIPIRParams: lwe must be LWEParams with p = 2^8 (DB bytes)")
        if not isinstance(self.ring, RingParams) or self.ring.log_p != ep.LOG_P:
            raise ValueError(f"VIPIRParams: ring must be RingParams with p = 2^{ep.LOG_P}")
        for name in ("blocks", "cols"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"VIPIRParams: {name} must be a positive int, got {v!r}")
        if self.protocol == "hybrid" and self.blocks & (self.blocks - 1):
            raise ValueError(f"VIPIRParams: hybrid folds binary dimensions; blocks must be a power of two, got {self.blocks}")
        if self.expansion_count > self.ring.n:
            raise ValueError(f"VIPIRParams: n + selector slots = {self.expansion_count} exceed N = {self.ring.n}")
        if self.lwe.n > 1 << 15:
            raise ValueError("VIPIRParams: LWE n must be <= 2^15 (exact int8-plane packing GEMM)")

    # --- dimensions ---------------------------------------------------------------------------
    @property
    def rows(self) -> int:
        """DB rows: blocks x N."""
        return self.blocks * self.ring.n

    @property
    def db_bytes(self) -> int:
        """DB size in bytes (rows x D_0)."""
        return self.rows * self.cols

    @property
    def record_bytes(self) -> int:
        """Bytes per record (a whole column for ExpPack(S), N otherwise)."""
        return self.rows if self.protocol == "exppack" else self.ring.n

    @property
    def num_records(self) -> int:
        """Number of records the DB holds."""
        return self.cols if self.protocol == "exppack" else self.blocks * self.cols

    @property
    def select_bits(self) -> int:
        """The hybrid's CMUX levels, log2(blocks) (0 for the other protocols)."""
        return (self.blocks - 1).bit_length() if self.protocol == "hybrid" else 0

    @property
    def expansion_count(self) -> int:
        """Ciphertexts query expansion must produce: the LWE dimension n plus the hybrid's selector slots."""
        return self.lwe.n + self.select_bits * self.ring.sel_len

    @property
    def levels(self) -> int:
        """Expansion levels, ceil(log2(expansion_count)) (one key each)."""
        return ep.expansion_levels(self.expansion_count)

    @property
    def response_cts(self) -> int:
        """RLWE ciphertexts per answer (blocks, 1 or 8)."""
        return {"exppack": self.blocks, "hybrid": 1, "double": 8}[self.protocol]

    # --- communication (bytes; VIPIR Table 1 counts query + ct_ExpPack + response) -------------
    def communication(self) -> dict:
        """Bytes of each message (VIPIR Table 1): query (LWE parts + ct_ExpPack), response, their
        total, the reusable keys uploaded once, and the record size."""
        ring = self.ring
        q1 = 4 * self.cols
        q2 = 4 * self.blocks if self.protocol == "double" else 0
        ct = ring.ct_bytes()
        resp = self.response_cts * ring.ct_bytes(1)
        keys = self.levels * ring.ks_len * ring.ct_bytes()
        if self.protocol == "hybrid":
            keys += 2 * ring.ks_len * ring.ct_bytes()          # RGSW(s) conversion key
        return {"query": q1 + q2 + ct, "lwe_query": q1 + q2, "ct_exppack": ct, "response": resp,
                "total": q1 + q2 + ct + resp, "reusable_keys": keys, "record": self.record_bytes}

    def __repr__(self) -> str:
        return (f"VIPIRParams({self.protocol}, DB {self.rows} x {self.cols} bytes "
                f"({self.num_records} records x {self.record_bytes} B), {self.lwe!r}, {self.ring!r})")


def make_params(protocol: str, *, blocks: int, cols: int, lwe: LWEParams = LWE_N1280,
                ring: RingParams = RING_N4096, rng: HostRandom | None = None,
                a_seed: int | None = None, a2_seed: int | None = None) -> VIPIRParams:
    """A protocol instance with fresh public seeds (from ``rng``, default os.urandom)."""
    rng = HostRandom() if rng is None else rng
    return VIPIRParams(protocol=protocol, lwe=lwe, ring=ring, blocks=int(blocks), cols=int(cols),
                       a_seed=rng.seed64() if a_seed is None else int(a_seed),
                       a2_seed=rng.seed64() if a2_seed is None else int(a2_seed))


def paper_params(protocol: str, db_gib: float, *, lwe: LWEParams = LWE_N1280,
                 ring: RingParams = RING_N4096, rng: HostRandom | None = None, **kw) -> VIPIRParams:
    """The paper's dimensioning for a DB of ``db_gib`` GiB of 1-byte records (§3.5): hybrid and
    double-packing use D / D_0 = 2^20 (blocks = 2^20 / N = 256 at N = 4096); ExpPack(S) uses
    D_0 = sqrt(D) (rounded to powers of two, D_1 = D / D_0)."""
    total = int(round(db_gib * (1 << 30)))
    if total & (total - 1):
        raise ValueError(f"paper_params: DB size must be a power of two bytes, got {db_gib} GiB")
    log_d = total.bit_length() - 1
    log_n = ring.n.bit_length() - 1
    if protocol == "exppack":
        log_d0 = log_d // 2
        blocks = 1 << max(0, log_d - log_d0 - log_n)
    else:
        log_d0 = max(0, log_d - 20)
        blocks = 1 << (20 - log_n)
    return make_params(protocol, blocks=blocks, cols=1 << log_d0, lwe=lwe, ring=ring, rng=rng, **kw)


# --- objects ----------------------------------------------------------------------------------


@pytree_dataclass
class ClientKeys:
    """Long-term client keys. ``ring_key`` is secret; ``public`` is uploaded once."""

    ring_key: RingKey
    public: "PublicKeys"
    params: VIPIRParams = static_field()

    def __repr__(self) -> str:
        return f"ClientKeys({self.params!r})"


@pytree_dataclass
class PublicKeys:
    """Reusable evaluation keys stored by the server: expansion keys and (hybrid) the
    RGSW(s) conversion key (rows uint32[2, ks_len, 2, L, N], or None)."""

    expansion: ep.ExpansionKeys
    conversion: rgsw.RGSWCiphertext | None
    params: VIPIRParams = static_field()


@pytree_dataclass
class Server:
    """Server state: ``db`` int8[rows, D_0], or a tuple of K equal row chunks int8[rows / K, D_0]
    (chunk k holds rows k rows / K ..; see :class:`Chunking`); ``planes`` int8[N, L, 4 blocks, n]
    (the NTT'd hint in byte planes), or a tuple of equal slot chunks int8[N / K', L, 4 blocks, n];
    ``tables`` (RingTables). Static: params."""

    db: jax.Array
    planes: jax.Array
    tables: RingTables
    params: VIPIRParams = static_field()


@pytree_dataclass
class Query:
    """b: uint32[B, D_0]; ct: uint32[B, 2, L, N] (ct_ExpPack, NTT domain); b2: uint32[B, blocks]
    (double-packing's second query) or None."""

    b: jax.Array
    ct: jax.Array
    b2: jax.Array | None
    params: VIPIRParams = static_field()


@pytree_dataclass
class QuerySecret:
    """Kept by the client: s: int8[B, n] (fresh LWE secrets), index: int32[B]."""

    s: jax.Array
    index: jax.Array
    params: VIPIRParams = static_field()

    def __repr__(self) -> str:
        return f"QuerySecret(B={self.s.shape[0]}, {self.params!r})"


@pytree_dataclass
class Answer:
    """ct: uint32[B, k, 2, N]: k RLWE ciphertexts mod q_0 (coefficient domain) per query."""

    ct: jax.Array
    params: VIPIRParams = static_field()


# --- client -------------------------------------------------------------------------------------


def client_keygen(params: VIPIRParams, tables: RingTables, rng: HostRandom | None = None, *,
                  progress: bool | None = None) -> ClientKeys:
    """Long-term RLWE key plus its public expansion (and hybrid conversion) keys. ``progress``:
    a tqdm bar over the expansion keys (None: when they take long; about 0.5 s for VIPIR's
    N = 4096 sets on a CPU host, so no bar by default)."""
    _check_params(params, "client_keygen")
    _check_tables(params, tables, "client_keygen")
    rng = HostRandom() if rng is None else rng
    key = rg.keygen(tables, rng)
    exp = ep.make_expansion_keys(key, tables, params.levels, rng, progress=progress)
    conv = None
    if params.protocol == "hybrid":
        r = params.ring
        conv = rgsw.encrypt(key.s_ntt, key.s_ntt, tables.ks, tables.ctx, rng, r.sigma, r.tail)
    return ClientKeys(ring_key=key, public=PublicKeys(expansion=exp, conversion=conv, params=params),
                      params=params)


def client_query(keys: ClientKeys, tables: RingTables, indices,
                 rng: HostRandom | None = None) -> tuple[Query, QuerySecret]:
    """Queries for record ``indices`` (int or sequence in [0, num_records)); fresh LWE secrets."""
    if not isinstance(keys, ClientKeys):
        raise TypeError(f"client_query: expected ClientKeys (client_keygen), got {type(keys).__name__}")
    params = keys.params
    _check_tables(params, tables, "client_query")
    rng = HostRandom() if rng is None else rng
    idx = _indices(params, indices)
    bsz, lw = idx.size, params.lwe
    col = idx % params.cols if params.protocol != "exppack" else idx
    blk = idx // params.cols if params.protocol != "exppack" else np.zeros_like(idx)
    s = rng.ternary((bsz, lw.n))
    e = rng.gaussian((bsz, params.cols), lw.sigma, lw.tail)
    a = public_matrix(params.a_seed, params.cols, lw.n)
    b = onehot_query_b(a, jnp.asarray(s), jnp.asarray(e), jnp.asarray(col), params.cols, lw.delta)
    b2 = None
    if params.protocol == "double":
        a2 = public_matrix(params.a2_seed, params.blocks, lw.n)
        e2 = rng.gaussian((bsz, params.blocks), lw.sigma, lw.tail)
        b2 = onehot_query_b(a2, jnp.asarray(s), jnp.asarray(e2), jnp.asarray(blk), params.blocks, lw.delta)
    msg = ep.special_message(s, tables, _selector_slots(params, blk))
    ct = rg.encrypt_ntt(keys.ring_key, ntt(jnp.asarray(msg), tables.ctx), tables, rng)
    return (Query(b=b, ct=ct, b2=b2, params=params),
            QuerySecret(s=jnp.asarray(s), index=jnp.asarray(idx), params=params))


def _selector_slots(params, blk):
    """Hybrid: slot n + t * sel_len + j carries bit_t(block) * B_sel^j (mod q_l)."""
    if params.protocol != "hybrid" or not params.select_bits:
        return None
    ring = params.ring
    extra = np.zeros((blk.size, ring.limbs, ring.n), dtype=np.uint32)
    for t in range(params.select_bits):
        bit = (blk >> t) & 1
        for j in range(ring.sel_len):
            slot = params.lwe.n + t * ring.sel_len + j
            extra[:, :, slot] = bit[:, None] * np.array([pow(2, ring.sel_base_log * j, q) for q in ring.primes],
                                                       dtype=np.uint32)[None, :]
    return extra


def decode(keys: ClientKeys, tables: RingTables, secret: QuerySecret, ans: Answer) -> np.ndarray:
    """Recover the records: uint8[B, record_bytes]."""
    params = keys.params
    for x, cls in ((secret, QuerySecret), (ans, Answer)):
        if not isinstance(x, cls):
            raise TypeError(f"decode: expected a {cls.__name__}, got {type(x).__name__}")
        if x.params != params:
            raise ValueError(f"decode: the {cls.__name__} is for {x.params!r}, the keys for {params!r}")
    bsz, n = secret.s.shape[0], params.ring.n
    if ans.ct.shape != (bsz, params.response_cts, 2, n):
        raise ValueError(f"decode: answer must be uint32[B={bsz}, {params.response_cts}, 2, {n}], got {ans.ct.shape}")
    out = _to_bytes(rg.decrypt_switched(keys.ring_key, ans.ct, tables))           # [B, k, N]
    if params.protocol == "double":
        words = lax.bitcast_convert_type(out.reshape(bsz, 2, n, 4), _U32)       # the q_0 ciphertext
        out = _to_bytes(rg.decrypt_switched(keys.ring_key, words, tables))[:, None]
    return np.asarray(out).reshape(bsz, -1)


def _to_bytes(m18):
    """RLWE plaintexts mod 2^18 = 2^10 byte + noise -> uint8 bytes."""
    return (((m18 + _U32(1 << 9)) >> 10) & _U32(0xFF)).astype(jnp.uint8)


# --- server -------------------------------------------------------------------------------------


def encode_database(params: VIPIRParams, records) -> np.ndarray:
    """records uint8[num_records, record_bytes] (fewer rows are zero-padded) -> int8[rows, D_0]."""
    return encode_rows(params, records, 0, params.rows)


def encode_rows(params: VIPIRParams, records, r0: int, r1: int) -> np.ndarray:
    """Rows r0 .. r1 - 1 of :func:`encode_database` (int8[r1 - r0, D_0]), built from the records
    they hold only (hybrid/double-packing: whole blocks, r0 and r1 multiples of N)."""
    rec = _check_records(params, records)
    if not 0 <= r0 < r1 <= params.rows:
        raise ValueError(f"encode_rows: need 0 <= r0 < r1 <= rows = {params.rows}, got {r0}, {r1}")
    cols, n = params.cols, params.ring.n
    if params.protocol == "exppack":                    # record c is column c: rows are bytes
        out = np.zeros((r1 - r0, cols), dtype=np.int8)
        out[:, : rec.shape[0]] = rec[:, r0:r1].view(np.int8).T
        return out
    if r0 % n or r1 % n:
        raise ValueError(f"encode_rows: {params.protocol} rows come in blocks of N = {n}; got {r0}, {r1}")
    b0, b1 = r0 // n, r1 // n
    part = np.zeros(((b1 - b0) * cols, n), dtype=np.int8)
    got = rec[b0 * cols: b1 * cols]
    part[: got.shape[0]] = got.view(np.int8)
    return np.ascontiguousarray(part.reshape(b1 - b0, cols, n).transpose(0, 2, 1).reshape(r1 - r0, cols))


def _check_records(params, records):
    rec = np.asarray(records)
    if rec.dtype not in (np.uint8, np.int8):
        raise TypeError(f"encode_database: records must be uint8 or int8, got {rec.dtype}")
    if rec.ndim != 2 or rec.shape[1] != params.record_bytes or rec.shape[0] > params.num_records:
        raise ValueError(f"encode_database: records must be uint8[<= {params.num_records}, "
                         f"{params.record_bytes}], got {rec.shape}")
    return rec


def server_setup(params: VIPIRParams, records, tables: RingTables | None = None, *,
                 progress: bool | None = None, blocks_per_step: int = 8,
                 chunking: Chunking | None = None) -> Server:
    """Put the DB on the device and precompute the hint planes (offline), ``blocks_per_step``
    blocks of N rows at a time (tqdm progress when there is more than one step).

    ``records``: uint8[<= num_records, record_bytes], or a callable ``rows(r0, r1)`` returning
    the encoded DB rows r0 .. r1 - 1 (int8[r1 - r0, D_0], numpy or a device array; e.g. generated
    on the device). ``chunking`` (:class:`Chunking`, e.g. ``memory.plan(...).chunking``): the DB
    is built and held in ``db_chunks`` row chunks and the planes in ``plane_chunks`` slot chunks;
    each DB chunk is encoded on the host and copied on its own, so neither the host nor the
    device ever holds a second copy of the whole DB."""
    _check_params(params, "server_setup")
    tables = rg.make_tables(params.ring) if tables is None else tables
    _check_tables(params, tables, "server_setup")
    db, planes = build_parts(params, records, tables, chunking, [None], progress=progress,
                             blocks_per_step=blocks_per_step)
    one = lambda parts: parts[0][0] if len(parts) == 1 else tuple(p[0] for p in parts)  # noqa: E731
    return Server(db=one(db), planes=one(planes), tables=tables, params=params)


def build_parts(params: VIPIRParams, records, tables: RingTables, chunking: Chunking | None, devices,
                *, progress=None, blocks_per_step: int = 8):
    """The DB and hint planes, built part by part on ``devices`` (a list; ``None`` = the default
    device): returns ``(db, planes)`` with ``db[k][d]`` device d's rows of DB chunk k (chunk k =
    rows k R / K .. (k + 1) R / K, device d holding its d-th of D equal sub-ranges) and
    ``planes[j][d]`` device d's copy of plane chunk j (slots j N / K' ..). Each part is encoded
    (or drawn by the callable ``records``) and hinted on its own device; the hint steps are
    copied into every device's planes in place. Used by :func:`server_setup` (one device) and
    ``sharded.server_setup``."""
    chunking = Chunking() if chunking is None else chunking
    if not isinstance(chunking, Chunking):
        raise TypeError(f"server_setup: chunking must be a Chunking, got {type(chunking).__name__}")
    k, kp, d = chunking.db_chunks, chunking.plane_chunks, len(devices)
    n, limbs, nl = params.ring.n, params.ring.limbs, params.lwe.n
    if params.blocks % (k * d):
        raise ValueError(f"server_setup: {params.blocks} blocks of N rows do not split into {k} DB chunks "
                         f"x {d} devices")
    if n % kp:
        raise ValueError(f"server_setup: N = {n} slots do not split into {kp} plane chunks")
    source = records if callable(records) else functools.partial(encode_rows, params, _check_records(params, records))
    put = lambda x, dev: jnp.asarray(x) if dev is None else jax.device_put(x, dev)  # noqa: E731
    a = public_matrix(params.a_seed, params.cols, nl)
    a_dev = [put(a, dev) for dev in devices]
    t_dev = [tables if dev is None else jax.device_put(tables, dev) for dev in devices]
    part_blocks = params.blocks // (k * d)
    step = max(1, min(int(blocks_per_step), part_blocks))
    while part_blocks % step:
        step -= 1
    # allocated once in their final shape and filled in place (a reshape outside jit would copy)
    planes = []
    for _ in range(kp):
        row = []
        for dev in devices:
            with _on(dev):
                row.append(jnp.zeros((n // kp, limbs, 4 * params.blocks, nl), jnp.int8))
        planes.append(row)
    db = [[None] * d for _ in range(k)]
    todo = [(c, i, s) for c in range(k) for i in range(d) for s in range(0, part_blocks, step)]
    for c, i, s in progress_bar(todo, progress, auto=len(todo) > 1, desc="VIPIR DB + hint", unit="step"):
        dev = devices[i]
        if s == 0:
            r0 = (c * d + i) * part_blocks * n
            with _on(dev):
                rows = source(r0, r0 + part_blocks * n)
            rows = put(rows, dev)
            if rows.shape != (part_blocks * n, params.cols) or np.dtype(rows.dtype) not in (np.int8, np.uint8):
                raise ValueError(f"server_setup: rows {r0}..{r0 + part_blocks * n} must be int8"
                                 f"[{part_blocks * n}, {params.cols}], got {rows.dtype}{list(rows.shape)}")
            db[c][i] = lax.bitcast_convert_type(rows, jnp.int8) if rows.dtype == jnp.uint8 else rows
        b0 = (c * d + i) * part_blocks + s
        chunk = _hint_rows(db[c][i], s * n, step * n, a_dev[i], t_dev[i]).reshape(n, limbs, 4, step, nl)
        for j in range(kp):
            piece = chunk[j * (n // kp):(j + 1) * (n // kp)] if kp > 1 else chunk
            for e, dev_e in enumerate(devices):
                planes[j][e] = _insert(planes[j][e], piece if dev_e in (None, dev) else jax.device_put(piece, dev_e), b0)
    return db, planes


def _on(dev):
    """Arrays created inside land on ``dev`` (None: the default device)."""
    return contextlib.nullcontext() if dev is None else jax.default_device(dev)


def compute_hint(params: VIPIRParams, db, tables: RingTables, *, progress=None,
                 blocks_per_step: int = 8, plane_chunks: int = 1):
    """int8[N, L, 4 blocks, n]: byte planes of NTT(lift(round_{2^18}(DB @ A))) per block, for
    ``db`` int8[rows, D_0] or a tuple of row chunks; a tuple of ``plane_chunks`` slot chunks
    when that is > 1."""
    chunks = db if isinstance(db, (tuple, list)) else (db,)
    per = params.rows // len(chunks)
    _, planes = build_parts(params, lambda r0, r1: chunks[r0 // per], tables,
                            Chunking(db_chunks=len(chunks), plane_chunks=plane_chunks), [None],
                            progress=progress, blocks_per_step=blocks_per_step)
    return planes[0][0] if plane_chunks == 1 else tuple(p[0] for p in planes)


@functools.partial(jax.jit, static_argnums=2)
def _hint_rows(db, r0, count, a, tables):
    """Hint planes of DB rows r0 .. r0 + count - 1 (a slice inside the jit: no eager copy)."""
    rows = lax.dynamic_slice_in_dim(db, r0, count, axis=0)
    return ep.hint_planes(db_gemm(rows, a), tables)


@functools.partial(jax.jit, donate_argnums=0)
def _insert(planes, chunk, b0):
    """planes int8[N', L, 4 blocks, n] (donated: updated in place) <- chunk int8[N', L, 4, cnt, n]
    at blocks b0 .. b0 + cnt - 1 of each of the 4 byte planes."""
    n, limbs, rows, nl = planes.shape
    view = planes.reshape(n, limbs, 4, rows // 4, nl)                   # free inside jit
    return lax.dynamic_update_slice(view, chunk, (0, 0, 0, b0, 0)).reshape(planes.shape)


def first_fold(server: Server, query: Query) -> jax.Array:
    """(1): y = DB @ b for the batch: uint32[B, rows] (one DB GEMM per DB chunk)."""
    return fold_chunks(server.db, query.b)


def fold_chunks(db, b: jax.Array) -> jax.Array:
    """DB @ b for ``db`` int8[rows, D_0] or a tuple of row chunks, b uint32[B, D_0] ->
    uint32[B, rows] (chunk outputs side by side)."""
    if not isinstance(db, (tuple, list)):
        return db_gemm(db, b.T).T
    return jnp.concatenate([db_gemm(c, b.T).T for c in db], axis=1)


#: Queries expanded (and double-packing second stages run) together; larger batches are
#: processed STREAM at a time with lax.map, bounding the memory of these stages to O(STREAM)
#: queries (VIPIR §4.4's stream-wise buffering). The shared-hint packing GEMM stays batched.
STREAM = 8

#: The same bound for query expansion alone. Larger: every lax.map step writes its output into
#: a zero-filled stacked buffer (an extra write of the whole output plus its copy, 8 GiB of the
#: 77 GiB that expansion writes at batch 32 (CPU-compiled HLO)), while one 32-query expansion
#: needs ~23 GiB of temporaries (answer peak 55.6 GiB at a 16 GiB DB, batch 32, CPU compile).
#: The hybrid fold gains nothing from a larger stream (same bytes), so it keeps STREAM.
EXPAND_STREAM = 32


def _streamed(fn, args, bsz, stream=None):
    c = math.gcd(bsz, STREAM if stream is None else stream)
    if c == bsz:
        return fn(*args)
    chunked = jax.tree.map(lambda x: x.reshape((bsz // c, c) + x.shape[1:]), args)
    out = lax.map(lambda a: fn(*a), chunked)
    return jax.tree.map(lambda x: x.reshape((bsz,) + x.shape[2:]), out)


def expand_query(server: Server, keys: PublicKeys, query: Query, stream: int | None = None) -> jax.Array:
    """Expansion of ct_ExpPack: uint32[B, n + selector slots, 2, L, N] (NTT domain), ``stream``
    queries at a time (None: :data:`EXPAND_STREAM`)."""
    count = server.params.expansion_count
    return _streamed(lambda ct: ep.expand(ct, keys.expansion, server.tables, count), (query.ct,),
                     query.ct.shape[0], EXPAND_STREAM if stream is None else stream)


def pack_first(server: Server, expanded: jax.Array, y: jax.Array, max_temp_bytes: int | None = None) -> jax.Array:
    """(3): blocks RLWE ciphertexts per query, uint32[B, blocks, 2, L, N] (``max_temp_bytes``:
    see ``exppack.pack``)."""
    return ep.pack(server.planes, expanded, y, server.tables, max_temp_bytes=max_temp_bytes)  # first n slots


def hybrid_fold(server: Server, keys: PublicKeys, expanded: jax.Array, packed: jax.Array) -> jax.Array:
    """(7)...(7): CMUX tree over the blocks with RGSW selectors built from the expanded slots;
    returns uint32[B, 1, 2, L, N]."""
    params, t = server.params, server.tables
    bits, ring = params.select_bits, params.ring
    if not bits:
        return packed
    rows_b = expanded[:, params.lwe.n:].reshape((expanded.shape[0], bits, ring.sel_len) + expanded.shape[2:])
    sel = rgsw.from_rlwe(rows_b, keys.conversion, t.ks, t.ctx)           # rows [B, bits, 2, len, 2, L, N]
    cts = packed
    for level in range(bits):
        sel_t = rgsw.RGSWCiphertext(rows=sel.rows[:, level][:, None])
        cts = rgsw.cmux(sel_t, cts[:, 0::2], cts[:, 1::2], t.sel, t.ctx)
    return cts


def double_second(server: Server, expanded: jax.Array, switched: jax.Array, b2: jax.Array) -> jax.Array:
    """(4) -> (1) -> (3): reinterpret the q_0 ciphertexts uint32[B, blocks, 2, N] as bytes, fold
    with the second LWE query, pack into 8 RLWE ciphertexts: uint32[B, 8, 2, L, N]."""
    params, t = server.params, server.tables
    n, nl = params.ring.n, params.lwe.n
    bsz = switched.shape[0]
    raw = lax.bitcast_convert_type(lax.bitcast_convert_type(switched, jnp.uint8), jnp.int8)
    mat = raw.reshape(bsz, params.blocks, 8 * n).transpose(0, 2, 1)          # [B, 8N, blocks]
    a2 = public_matrix(params.a2_seed, params.blocks, nl)
    lwe_cts = jax.vmap(lambda m, q2: db_gemm(m, jnp.concatenate([a2, q2[:, None]], axis=1)))(mat, b2)
    planes = jax.vmap(lambda a: ep.hint_planes(a, t))(lwe_cts[..., :nl])     # [B, N, L, 32, n]
    return ep.pack(planes, expanded[:, :nl], lwe_cts[..., nl], t)


def answer(server: Server, keys: PublicKeys, query: Query, *, chunking: Chunking | None = None) -> Answer:
    """The server's online step for a batch of queries (one jitted call). ``chunking``: the
    streams and packing bound of :class:`Chunking` (e.g. ``memory.plan(...).chunking``; the
    DB and plane chunks are those the server holds)."""
    _check_answer_args(server, keys, query)
    return _answer(server, keys, query, _stages(chunking))


def _stages(chunking):
    if chunking is not None and not isinstance(chunking, Chunking):
        raise TypeError(f"answer: chunking must be a Chunking, got {type(chunking).__name__}")
    c = chunking or Chunking()
    return (c.expand_stream, c.stream, c.pack_temp_bytes)


@functools.partial(jax.jit, static_argnums=3)
def _answer(server, keys, query, stages):
    return after_first_fold(server, keys, query, first_fold(server, query), stages)


def after_first_fold(server: Server, keys: PublicKeys, query: Query, y: jax.Array,
                     stages: tuple = (None, None, None)) -> Answer:
    """Everything after the DB GEMM, for answers y: uint32[B, rows] (also the per-device part of
    the sharded server, which needs only ``server.planes``/``tables``, not the DB). ``stages``:
    (expand_stream, stream, pack_temp_bytes), None for the defaults."""
    expand_stream, stream, pack_temp = stages
    expanded = expand_query(server, keys, query, expand_stream)
    packed = pack_first(server, expanded, y, pack_temp)
    folded = second_stage(server, keys, query, expanded, packed, stream)
    return Answer(ct=rg.mod_switch(folded, server.tables), params=server.params)


def second_stage(server: Server, keys: PublicKeys, query: Query, expanded: jax.Array,
                 packed: jax.Array, stream: int | None = None) -> jax.Array:
    """The protocol's step between the first pack and the final switch, on packed
    uint32[B, blocks, 2, L, N]: the hybrid's CMUX fold (-> [B, 1, 2, L, N]), double-packing's
    switch + second fold + pack (-> [B, 8, 2, L, N]), nothing for ExpPack(S). Streamed (``stream``
    queries at a time, None: STREAM). A function of its own so that benchmarks can time it alone."""
    params = server.params
    if params.protocol == "hybrid":
        return _streamed(lambda e, pk: hybrid_fold(server, keys, e, pk), (expanded, packed),
                         packed.shape[0], stream)
    if params.protocol == "double":
        switched = rg.mod_switch(packed, server.tables)
        return _streamed(lambda e, sw, b2: double_second(server, e, sw, b2),
                         (expanded, switched, query.b2), switched.shape[0], stream)
    return packed


# --- checks -------------------------------------------------------------------------------------


def _check_params(params, what):
    if not isinstance(params, VIPIRParams):
        raise TypeError(f"{what}: expected VIPIRParams (protocols.make_params), got {type(params).__name__}")


def _check_tables(params, tables, what):
    if not isinstance(tables, RingTables):
        raise TypeError(f"{what}: expected RingTables (ring.make_tables), got {type(tables).__name__}")
    if tables.params != params.ring:
        raise ValueError(f"{what}: tables are for {tables.params!r} but the protocol uses {params.ring!r}")


def _indices(params, indices) -> np.ndarray:
    arr = np.asarray(indices)
    if arr.size == 0:
        raise ValueError("client_query: indices must be an int or a non-empty 1-D sequence, got none")
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"client_query: indices must be integers, got dtype {arr.dtype}")
    arr = np.atleast_1d(arr).astype(np.int64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"client_query: indices must be an int or a non-empty 1-D sequence, got shape {arr.shape}")
    bad = arr[(arr < 0) | (arr >= params.num_records)]
    if bad.size:
        raise ValueError(f"client_query: record index {int(bad[0])} is out of range [0, {params.num_records})")
    return arr.astype(np.int32)


def _check_answer_args(server, keys, query):
    if not isinstance(server, Server):
        raise TypeError(f"answer: expected a Server (server_setup), got {type(server).__name__}")
    if not isinstance(keys, PublicKeys):
        raise TypeError(f"answer: expected the client's PublicKeys (ClientKeys.public), got {type(keys).__name__}")
    if not isinstance(query, Query):
        raise TypeError(f"answer: expected a Query (client_query), got {type(query).__name__}")
    params = server.params
    for x, name in ((keys, "keys"), (query, "query")):
        if x.params != params:
            raise ValueError(f"answer: the {name} are for {x.params!r} but the server holds {params!r}")
    ring = params.ring
    bsz = query.b.shape[0] if query.b.ndim == 2 else -1
    if query.b.dtype != _U32 or query.b.shape != (bsz, params.cols):
        raise ValueError(f"answer: query.b must be uint32[B, D_0={params.cols}], got {query.b.dtype}{list(query.b.shape)}")
    if query.ct.dtype != _U32 or query.ct.shape != (bsz, 2, ring.limbs, ring.n):
        raise ValueError(f"answer: query.ct must be uint32[B={bsz}, 2, {ring.limbs}, {ring.n}], got "
                         f"{query.ct.dtype}{list(query.ct.shape)}")
    if params.protocol == "double" and (query.b2 is None or query.b2.shape != (bsz, params.blocks)):
        raise ValueError(f"answer: double-packing needs query.b2 uint32[B={bsz}, blocks={params.blocks}]")
    if keys.expansion.levels != params.levels:
        raise ValueError(f"answer: expansion keys have {keys.expansion.levels} levels, need {params.levels}")
    if params.protocol == "hybrid" and keys.conversion is None:
        raise ValueError("answer: the hybrid protocol needs the RGSW(s) conversion key")
    _check_held(server, "answer")


def _check_held(server, what):
    """The DB (whole or equal row chunks) and planes (whole or equal slot chunks) have the shapes
    of the server's params."""
    params = server.params
    n, limbs, nl = params.ring.n, params.ring.limbs, params.lwe.n
    for name, held, axis_len, rest in (("db", server.db, params.rows, (params.cols,)),
                                       ("planes", server.planes, n, (limbs, 4 * params.blocks, nl))):
        parts = held if isinstance(held, (tuple, list)) else (held,)
        want = (axis_len // len(parts),) + rest
        if axis_len % len(parts) or any(tuple(p.shape) != want or np.dtype(p.dtype) != np.int8 for p in parts):
            got = [f"{np.dtype(p.dtype).name}{list(p.shape)}" for p in parts]
            raise ValueError(f"{what}: server.{name} must be int8{list(want)} x {len(parts)} "
                             f"(whole or equal chunks), got {got}")
