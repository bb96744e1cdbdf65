"""The device-memory plan of a VIPIR PIR server: what a DB size, protocol, batch and device count
need on each device, and the chunking (:class:`~jax_fhe.pir.protocols.Chunking`) that makes the
peak fit a device's memory, decided before anything large is allocated.

    from jax_fhe.pir import memory, protocols as pr
    params = pr.paper_params("hybrid", 64)
    p = memory.plan(params, batch=32, memory_bytes=memory.device_memory())   # raises if nothing fits
    print(p.report())
    server = pr.server_setup(params, records, tables, chunking=p.chunking)
    answer = pr.answer(server, keys.public, query, chunking=p.chunking)

Per device, the plan counts (bytes):

  held     the DB (int8, rows / devices), the hint planes (int8[N, L, 4 blocks, n], replicated),
           the ring tables and one client's public keys;
  query    the batch's queries and answers;
  stages   the answer's buffers stage by stage (live outputs + the stage's temporaries): first
           fold (y = DB @ b, per DB chunk), expansion (streams of ``expand_stream`` queries),
           packing (int32 plane products bounded by ``pack_temp_bytes``, per plane chunk), the
           second stage (hybrid CMUX fold / double-packing's second fold, ``stream`` queries);
  autotune XLA's GEMM autotuner, at compile time, allocates copies of each GEMM's operands and
           output: the largest DB chunk or plane chunk GEMM (the reason the DB and planes are
           held in chunks: unchunked, a 64 GiB DB's autotuning needs a second 64 GiB);
  setup    building the server: the DB and planes plus one hint step;

and peak = held + query + max(autotune, largest stage) + :data:`RESERVE_BYTES`, fitted to the
budget less :data:`HEADROOM`. The stage
temporaries follow the sizes of the arrays involved, scaled by factors measured on the CPU
compiler's buffer assignment (``benchmarks/profile_pir.py --memory``); the buffer sizes are
exact (``tests/test_pir_memory.py`` compares them with the arrays).
"""
from __future__ import annotations

import dataclasses
import math

import jax

from .protocols import EXPAND_STREAM, STREAM, Chunking, VIPIRParams
from . import exppack as ep

GIB = 1 << 30

#: Expansion temporaries over the expansion's output, per query expanded together: CPU-compiled
#: HLO of the 16 GiB hybrid (count = 1360 ciphertexts of 96 KiB): 0.586 / 0.125 GiB at batch 1,
#: 18.75 / 3.98 GiB at batch 32 (both 4.7); 5 leaves a margin. Streams (lax.map) add a second
#: copy of the output and one step's output: the whole answer at 64 GiB, batch 32, streams of
#: 16 compiled to 17.3 GiB of temporaries on the CPU, against 14.1 planned without that term.
EXPAND_TEMP = 5.0
#: Hybrid CMUX-fold temporaries per streamed query, in ciphertexts (2 L N words) per block: CPU
#: compile of the 16 GiB hybrid, 0.193 GiB per query at 256 blocks (7.9 ciphertexts per block).
FOLD_TEMP_CTS = 9
#: Double-packing's second stage per streamed query, over its own planes (int8[N, L, 32, n]):
#: planes + LWE answers + plane products + the reinterpreted bytes. CPU compile of the 16 GiB
#: double-packing at batch 8 (one stream of 8): 9.69 GiB, 2.58 x the 8 x 0.469 GiB of planes.
DOUBLE_TEMP = 2.8
#: CUDA/cuBLAS workspaces, XLA's small buffers and allocator fragmentation.
RESERVE_BYTES = 1 * GIB
#: Fraction of the budget kept free: the stage factors come from the CPU compiler's buffer
#: assignment, and the GPU's (its scheduler overlaps more) has not been measured against them.
HEADROOM = 0.05
#: Preferred bound on one DB chunk and one plane chunk (what the autotuner copies): large
#: enough that each GEMM streams at full bandwidth, small beside the device's memory.
CHUNK_BYTES = 4 * GIB
#: Packing bound the plan starts from (exppack.PACK_TEMP_BYTES).
PACK_TEMP_BYTES = ep.PACK_TEMP_BYTES


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    """A server's memory plan on each of ``devices`` devices (bytes; see the module doc).

    held, stages, autotune, setup: dicts of named byte counts; ``peak_bytes`` the answer's
    peak, ``setup_peak_bytes`` the build's; ``chunking`` what to pass to ``server_setup`` and
    ``answer``; ``memory_bytes`` the budget it was fitted to (None: not fitted)."""

    params: VIPIRParams
    batch: int
    devices: int
    chunking: Chunking
    held: dict
    query: dict
    stages: dict
    autotune: dict
    setup: dict
    memory_bytes: int | None

    @property
    def held_bytes(self) -> int:
        """The server's persistent buffers: DB part, planes, tables, keys."""
        return sum(self.held.values())

    @property
    def peak_bytes(self) -> int:
        """Peak device memory of an answer (compile-time autotuning included)."""
        work = max(max(self.autotune.values()), max(sum(v.values()) for v in self.stages.values()))
        return self.held_bytes + sum(self.query.values()) + work + RESERVE_BYTES

    @property
    def setup_peak_bytes(self) -> int:
        """Peak device memory while the server is built."""
        return sum(self.setup.values()) + RESERVE_BYTES

    @property
    def fits(self) -> bool:
        """Whether both peaks fit ``memory_bytes`` less :data:`HEADROOM` (True when no budget
        was given)."""
        return (self.memory_bytes is None
                or max(self.peak_bytes, self.setup_peak_bytes) <= (1 - HEADROOM) * self.memory_bytes)

    def report(self) -> str:
        """The plan as a table (GiB)."""
        g = lambda b: f"{b / GIB:8.2f}"  # noqa: E731
        p, c = self.params, self.chunking
        lines = [f"PIR memory plan: {p.protocol}, DB {p.db_bytes / GIB:g} GiB ({p.rows} x {p.cols}), "
                 f"batch {self.batch}, {self.devices} device(s); per device, GiB",
                 f"  chunking: DB {c.db_chunks} chunk(s) of {p.db_bytes / self.devices / c.db_chunks / GIB:.3g} GiB, "
                 f"planes {c.plane_chunks} chunk(s); expand stream {c.expand_stream}, stream {c.stream}, "
                 f"pack bound {c.pack_temp_bytes / GIB:.3g} GiB"]
        for name, part in (("held", self.held), ("query", self.query)):
            lines += [f"  {name:<9}{k:<22}{g(v)}" for k, v in part.items()]
        for stage, part in self.stages.items():
            lines.append(f"  stage    {stage:<22}{g(sum(part.values()))}  ("
                         + ", ".join(f"{k} {v / GIB:.2f}" for k, v in part.items()) + ")")
        lines += [f"  autotune {k:<22}{g(v)}" for k, v in self.autotune.items()]
        lines.append(f"  reserve  {'(workspaces, frag.)':<22}{g(RESERVE_BYTES)}")
        lines.append(f"  peak     {'answer':<22}{g(self.peak_bytes)}")
        lines.append(f"  peak     {'setup':<22}{g(self.setup_peak_bytes)}")
        if self.memory_bytes is not None:
            lines.append(f"  budget   {'':<22}{g(self.memory_bytes)}  ({'fits' if self.fits else 'DOES NOT FIT'} "
                         f"with {100 * HEADROOM:g}% kept free)")
        return "\n".join(lines)

    def summary(self) -> dict:
        """JSON-friendly numbers: peaks, budget and chunking."""
        return dict(peak_bytes=self.peak_bytes, setup_peak_bytes=self.setup_peak_bytes,
                    memory_bytes=self.memory_bytes, devices=self.devices, batch=self.batch,
                    chunking=dataclasses.asdict(self.chunking))


def device_memory(device=None) -> int | None:
    """Bytes JAX's allocator may use on ``device`` (default: the first device): its
    ``memory_stats()["bytes_limit"]`` (with default settings 75% of a GPU's memory), None where
    the backend does not report it (CPU)."""
    device = jax.devices()[0] if device is None else device
    stats = device.memory_stats() or {}
    limit = stats.get("bytes_limit")
    return int(limit) if limit else None


def estimate(params: VIPIRParams, batch: int, chunking: Chunking | None = None, *, devices: int = 1,
             memory_bytes: int | None = None) -> MemoryPlan:
    """The plan of a given ``chunking`` (default: the defaults), without fitting anything."""
    _check(params, batch, devices)
    c = _complete(chunking or Chunking())
    ring, lwe = params.ring, params.lwe
    n, limbs, nl, blocks = ring.n, ring.limbs, lwe.n, params.blocks
    ct = 2 * limbs * n * 4                                          # one RLWE ciphertext (NTT, words)
    q = -(-batch // devices)                                        # queries per device after the all-to-all
    bp = q * devices                                                # padded batch
    rows_dev = params.rows // devices
    planes = n * limbs * 4 * blocks * nl
    keys = params.communication()["reusable_keys"]
    held = dict(db=rows_dev * params.cols, planes=planes, tables=64 * limbs * n * 4, keys=keys)
    query = dict(queries=bp * 4 * params.cols + q * ct + (q * 4 * blocks if params.protocol == "double" else 0),
                 answers=q * params.response_cts * 2 * n * 4)
    y = q * params.rows * 4                                         # the all-to-all's output
    y_local = bp * rows_dev * 4 if devices > 1 else 0
    chunk_rows = rows_dev // c.db_chunks
    stages = {}
    stages["first fold"] = dict(y=y, y_local=y_local, gemm=2 * chunk_rows * 4 * bp * 4 + 4 * bp * params.cols)
    count = params.expansion_count
    e = math.gcd(q, c.expand_stream)
    expanded = q * count * ct
    stages["expansion"] = dict(y=y, expanded=expanded, temp=int(EXPAND_TEMP * e * count * ct))
    if e < q:  # lax.map over streams: a stacked output buffer, its copy, and one step's output
        stages["expansion"]["streams"] = expanded + e * count * ct
    per_query = 32 * (n // c.plane_chunks) * limbs * 4 * blocks     # int32 plane products, one query
    group = _pack_group(q, c.pack_temp_bytes // c.plane_chunks, per_query)   # chunks share the bound
    packed = q * blocks * ct
    rhs = 2 * q * nl * ct // c.plane_chunks                         # the special cts, slot-major + planes
    # the plane chunks' GEMMs are independent: all their products may be alive at once (the
    # CPU compile of 64 GiB, batch 32, 4 chunks: 17.3 GiB of temporaries, whatever the streams)
    stages["packing"] = dict(y=y, expanded=expanded, packed=packed, products=c.plane_chunks * group * per_query,
                             rhs=rhs)
    s = math.gcd(q, c.stream)
    if params.protocol == "hybrid":
        rows = params.select_bits * 2 * ring.sel_len * ct
        stages["second stage"] = dict(expanded=expanded, packed=packed, temp=s * (rows + FOLD_TEMP_CTS * blocks * ct))
    elif params.protocol == "double":
        own = n * limbs * 32 * nl
        stages["second stage"] = dict(expanded=expanded, packed=packed, switched=q * blocks * 2 * n * 4,
                                      temp=int(s * DOUBLE_TEMP * own))
    autotune = dict(fold=chunk_rows * params.cols + 2 * chunk_rows * 4 * bp * 4 + 4 * bp * params.cols,
                    pack=planes // c.plane_chunks + rhs // 2 + group * per_query)
    step = min(8, blocks // (devices * c.db_chunks)) or 1
    step_rows = step * n
    setup = dict(db=held["db"], planes=planes, tables=held["tables"],
                 # the step's rows (sliced, or the whole DB chunk if the autotuner copies the
                 # fused slice's operand), DB @ A and its planes, the NTT temporaries, and a
                 # step's planes arriving from another device
                 hint_step=(chunk_rows + step_rows) * params.cols + step_rows * nl * 4 * 2
                 + 3 * step * nl * limbs * n * 4 + n * limbs * 4 * step * nl)
    return MemoryPlan(params=params, batch=batch, devices=devices, chunking=c, held=held, query=query,
                      stages=stages, autotune=autotune, setup=setup, memory_bytes=memory_bytes)


def plan(params: VIPIRParams, batch: int, *, devices: int = 1, memory_bytes: int | None = None,
         chunking: Chunking | None = None) -> MemoryPlan:
    """The memory plan of a server for ``params`` answering batches of ``batch`` queries on
    ``devices`` devices, fitted to ``memory_bytes`` per device (None: no bound).

    Without ``chunking``, starts from DB and plane chunks of at most :data:`CHUNK_BYTES`, the
    default streams and packing bound, and shrinks whichever term sets the peak (the packing
    bound, the expansion stream, the second-stage stream, the chunks) until both the answer's
    and the setup's peaks fit. With ``chunking``, checks that one. Raises ``MemoryError``, before
    anything is allocated, when nothing fits, naming the batch and device count that would."""
    _check(params, batch, devices)
    if memory_bytes is not None and (not isinstance(memory_bytes, (int, float)) or memory_bytes <= 0):
        raise ValueError(f"plan: memory_bytes must be a positive number of bytes, got {memory_bytes!r}")
    if chunking is not None:
        p = estimate(params, batch, chunking, devices=devices, memory_bytes=memory_bytes)
        _chunks_ok(params, p.chunking, devices)
        if not p.fits:
            raise MemoryError(_no_fit(p, memory_bytes, "with the given chunking"))
        return p
    p = _fit(params, batch, devices, memory_bytes)
    if not p.fits:
        raise MemoryError(_no_fit(p, memory_bytes, "even at the smallest chunking") + _what_fits(params, batch, devices, memory_bytes))
    return p


def _fit(params, batch, devices, memory_bytes):
    """Greedy: the default chunking, then shrink the term that sets the peak until it fits."""
    n, blocks = params.ring.n, params.blocks
    k = _first_div(blocks // devices, lambda k: params.db_bytes / devices / k <= CHUNK_BYTES)
    planes = n * params.ring.limbs * 4 * blocks * params.lwe.n
    kp = _first_div(n, lambda k: planes / k <= CHUNK_BYTES)
    c = Chunking(db_chunks=k, plane_chunks=kp, expand_stream=EXPAND_STREAM, stream=STREAM,
                 pack_temp_bytes=PACK_TEMP_BYTES)
    while True:
        p = estimate(params, batch, c, devices=devices, memory_bytes=memory_bytes)
        if p.fits:
            return p
        nxt = _shrink(params, p, devices)
        if nxt is None:
            return p
        c = nxt


def _shrink(params, p, devices):
    """The next smaller chunking, cutting the knob behind the peak's largest term (None: none left)."""
    c, n, blocks = p.chunking, params.ring.n, params.blocks
    terms = {("stage", k): sum(v.values()) for k, v in p.stages.items()}
    terms.update({("autotune", k): v for k, v in p.autotune.items()})
    if p.setup_peak_bytes > p.peak_bytes:
        terms = {("setup", "hint_step"): p.setup_peak_bytes}
    per_query = 32 * (n // c.plane_chunks) * params.ring.limbs * 4 * blocks
    options = {
        ("stage", "expansion"): [dict(expand_stream=c.expand_stream // 2)] if c.expand_stream > 1 else [],
        ("stage", "packing"): ([dict(pack_temp_bytes=max(per_query * c.plane_chunks, c.pack_temp_bytes // 2))]
                               if c.pack_temp_bytes > per_query * c.plane_chunks else []),
        ("stage", "second stage"): [dict(stream=c.stream // 2)] if c.stream > 1 else [],
        ("stage", "first fold"): _more_chunks(c, "db_chunks", blocks // devices),
        ("autotune", "fold"): _more_chunks(c, "db_chunks", blocks // devices),
        ("autotune", "pack"): ([dict(pack_temp_bytes=max(per_query * c.plane_chunks, c.pack_temp_bytes // 2))]
                               if c.pack_temp_bytes > per_query * c.plane_chunks else [])
                              + _more_chunks(c, "plane_chunks", n),
        ("setup", "hint_step"): _more_chunks(c, "db_chunks", blocks // devices),
    }
    for term, _ in sorted(terms.items(), key=lambda kv: -kv[1]):
        for change in options.get(term, []):
            return dataclasses.replace(c, **change)
    # the largest terms have no knob left: shrink anything that still can
    for change in ([dict(expand_stream=c.expand_stream // 2)] if c.expand_stream > 1 else []) + \
                  ([dict(stream=c.stream // 2)] if c.stream > 1 else []) + \
                  ([dict(pack_temp_bytes=max(per_query * c.plane_chunks, c.pack_temp_bytes // 2))]
                   if c.pack_temp_bytes > per_query * c.plane_chunks else []):
        return dataclasses.replace(c, **change)
    return None


def _more_chunks(c, name, limit):
    v = getattr(c, name)
    return [{name: 2 * v}] if limit % (2 * v) == 0 else []


def _first_div(total, ok):
    k = 1
    while not ok(k) and total % (2 * k) == 0:
        k *= 2
    return k


def _complete(c):
    return Chunking(db_chunks=c.db_chunks, plane_chunks=c.plane_chunks,
                    expand_stream=EXPAND_STREAM if c.expand_stream is None else c.expand_stream,
                    stream=STREAM if c.stream is None else c.stream,
                    pack_temp_bytes=PACK_TEMP_BYTES if c.pack_temp_bytes is None else c.pack_temp_bytes)


def _pack_group(q, budget, per_query):
    count = -(-q // max(1, budget // per_query))
    return -(-q // count)


def _check(params, batch, devices):
    if not isinstance(params, VIPIRParams):
        raise TypeError(f"plan: expected VIPIRParams (protocols.paper_params / make_params), got {type(params).__name__}")
    for name, v in (("batch", batch), ("devices", devices)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"plan: {name} must be a positive int, got {v!r}")
    if params.blocks % devices:
        raise ValueError(f"plan: {params.blocks} blocks of N rows do not split over {devices} devices")


def _chunks_ok(params, c, devices):
    if (params.blocks // devices) % c.db_chunks:
        raise ValueError(f"plan: {params.blocks // devices} blocks per device do not split into {c.db_chunks} DB chunks")
    if params.ring.n % c.plane_chunks:
        raise ValueError(f"plan: N = {params.ring.n} slots do not split into {c.plane_chunks} plane chunks")


def _no_fit(p, memory_bytes, how):
    prm = p.params
    need = max(p.peak_bytes, p.setup_peak_bytes)
    return (f"PIR memory plan: {prm.protocol}, DB {prm.db_bytes / GIB:g} GiB, batch {p.batch} on {p.devices} "
            f"device(s) needs {need / GIB:.2f} GiB per device {how} (DB {p.held['db'] / GIB:.2f} + planes "
            f"{p.held['planes'] / GIB:.2f} GiB held), more than {100 * (1 - HEADROOM):g}% of the "
            f"{memory_bytes / GIB:.2f} GiB available")


def _what_fits(params, batch, devices, memory_bytes):
    """'; fits: ...' naming the largest batch on these devices and the fewest devices for this batch."""
    out = []
    b = batch // 2
    while b >= 1:
        if _fit(params, b, devices, memory_bytes).fits:
            out.append(f"batch {b} on {devices} device(s)")
            break
        b //= 2
    d = devices * 2
    while d <= params.blocks and d <= 64:
        if params.blocks % d == 0 and _fit(params, batch, d, memory_bytes).fits:
            out.append(f"batch {batch} on {d} devices")
            break
        d *= 2
    return "; would fit: " + (" or ".join(out) if out else "nothing up to 64 devices")
