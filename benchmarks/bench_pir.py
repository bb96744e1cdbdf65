"""Server online latency and throughput of VIPIR's protocols (hybrid, ExpPack(S), double-packing).

    python benchmarks/bench_pir.py --gib 1 4 16 --batches 1 32 --out pir.json      # GPU
    python benchmarks/bench_pir.py --gib 16 --protocols hybrid --results           # update the page
    python benchmarks/bench_pir.py --db-gib 64 --protocols hybrid --batches 1 32 --reps 5 --long-run 128 --results
    python benchmarks/bench_pir.py --db-gib 64 --devices 2 --batches 32            # sharded over 2 GPUs
    python benchmarks/bench_pir.py --db-gib 64 --batches 32 --memory-gib 105 --plan-only   # any machine
    python benchmarks/bench_pir.py --quick                                         # CPU smoke run

For each protocol, DB size (the paper's layouts: hybrid/double D / D_0 = 2^20, ExpPack(S)
D_0 = sqrt(D)) and batch, the full jitted ``answer`` is timed (median of --reps after warm-up):
latency (ms), QPS = B / latency, the DB GEMM alone (first fold) and its share, the DB GEMM's
int8 tensor-core utilisation (4 planes x 2 x rows x D_0 x B ops over --int8-ops), and the
ratio of the latency to the HBM floor (DB + hint planes read once, over --bandwidth).

Memory: ``jax_fhe.pir.memory.plan`` picks, per DB size and the largest batch, the chunking
(DB and hint planes held in chunks, expansion / second-stage streams, packing bound) whose
estimated peak fits --memory-gib per device (default: what JAX's allocator may use, i.e. its
default 75% of the GPU), and the server is built chunk by chunk with it; a configuration that
cannot fit stops before allocating, naming what would. The plan's peak is printed beside the
measured peak (``memory_stats()``, max over devices). --plan-only prints the plans and exits
(no device work). --devices D shards the DB over the first D devices (``pir.sharded``).

--long-run N answers N more queries in batches of the largest --batches, cycling over 4
query batches: every answer must equal that batch's first answer bit for bit (the first of
each is decoded and checked against the DB), the throughput of any window of up to 8 batches
(at least 4 windows) may not fall more than 1.3x below the best, and device memory in use may not grow; the exit status
is 1 if any check fails.

The DB is random bytes generated on the device chunk by chunk (never zeros); the hint is
computed for it. ``--results`` merges the rows into benchmarks/results/pir.json, from which
``results_page.py`` renders benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jax_fhe.lwe import LWE_TOY
from jax_fhe.pir import memory
from jax_fhe.pir import protocols as pr
from jax_fhe.pir import ring, sharded
from jax_fhe.rns import HostRandom

from db_gemm import bench  # benchmarks/ sibling: one timing loop for the PIR benchmarks
from results import add_argument as add_results_argument
from results import entry as result_entry
from results import merge as merge_results
from results import refuse_quick_default

#: the H100's measured copy rate, bytes/s (the floors' default bandwidth)
H100_COPY_BYTES_PER_S = 3.0e12


def peak_bytes(devices=None):
    """Peak bytes in use, max over ``devices`` (default: the first), None where not reported."""
    peaks = [(d.memory_stats() or {}).get("peak_bytes_in_use") for d in (devices or jax.devices()[:1])]
    return max(peaks) if all(p is not None for p in peaks) else None


def in_use_bytes(devices):
    """Bytes in use now, summed over ``devices`` (None where not reported)."""
    now = [(d.memory_stats() or {}).get("bytes_in_use") for d in devices]
    return sum(now) if all(v is not None for v in now) else None


#: Bytes of the random DB drawn per step: jax.random.bits holds ~3 temporaries the size of its
#: output (CPU compile of one 16 GiB draw: 48 GiB of temporaries), so the DB is drawn in steps.
DB_STEP_BYTES = 1 << 26


@functools.partial(jax.jit, static_argnums=(0, 1))
def random_db(rows, cols, seed):
    """Random bytes int8[rows, cols] (cols % 4 == 0; not an all-zero DB) in ONE jitted call that
    allocates only the DB plus one step's temporaries: uint32 words drawn DB_STEP_BYTES at a
    time (one key per step) and bitcast to bytes inside the jit (eagerly, as before, the
    bitcast and the reshape each returned a DB-sized copy)."""
    step = max(d for d in range(1, rows + 1) if rows % d == 0 and d * cols <= max(DB_STEP_BYTES, cols))
    keys = jax.random.split(jax.random.key(seed), rows // step)

    def draw(key):  # bitcast per step: on the stacked words it would copy the whole DB
        words = jax.random.bits(key, (step, cols // 4), jnp.uint32)
        return jax.lax.bitcast_convert_type(words, jnp.int8).reshape(step, cols)

    return jax.lax.map(draw, keys).reshape(rows, cols)


def build_server(params, tables, seed, chunking=None, mesh=None):
    """A Server for a random DB, built chunk by chunk (each part drawn on its own device): the
    DB and its hint planes are the only large buffers. ``mesh``: shard over its devices."""
    def rows(r0, r1):
        return random_db(r1 - r0, params.cols, seed + r0 // params.ring.n)
    if mesh is None:
        return pr.server_setup(params, rows, tables, chunking=chunking, progress=False)
    return sharded.server_setup(params, rows, tables, mesh, chunking=chunking, progress=False)


def db_rows(server, params, r0, r1):
    """Rows r0 .. r1 - 1 of the (possibly chunked) DB as numpy (within one chunk)."""
    chunks = server.db if isinstance(server.db, (tuple, list)) else (server.db,)
    per = params.rows // len(chunks)
    c = chunks[r0 // per]
    return np.asarray(c[r0 % per: r0 % per + (r1 - r0)])


def records_of(server, params, idx):
    """The records ``idx`` read back from the device DB: uint8[B, record_bytes] (hybrid/double)."""
    n, out = params.ring.n, []
    for i in idx:
        blk, col = divmod(int(i), params.cols)
        out.append(db_rows(server, params, blk * n, (blk + 1) * n)[:, col].view(np.uint8))
    return np.stack(out)


def planes_bytes(params) -> int:
    """Bytes of the server's hint planes (int8[N, limbs, 4 blocks, n])."""
    return params.ring.n * params.ring.limbs * 4 * params.blocks * params.lwe.n


def pir_entry(params, batch: int, seconds: float, device_kind: str, bandwidth: float, devices: int = 1,
              notes: str | None = None) -> dict:
    """One answer timing in the results format (benchmarks/results.py); floor: the DB and the
    hint planes read once at ``bandwidth`` (per device: its DB share and its planes replica)."""
    size = (f"{params.db_bytes / 2**30:g} GiB" if params.db_bytes >= 1 << 28
            else f"{params.db_bytes >> 10} KiB (toy)")
    hbm = params.db_bytes / devices + planes_bytes(params)
    floor_s = hbm / bandwidth
    on = f", {devices} devices" if devices > 1 else ""
    key = f"pir/{params.protocol}/{size.replace(' ', '')}/B={batch}" + (f"/D={devices}" if devices > 1 else "")
    return result_entry(
        key, "PIR answer (server, online)",
        f"{params.protocol}, DB {size} (D_0 = {params.cols}), batch {batch}{on}", device_kind,
        unit="ms", time=round(seconds * 1e3, 2), clock="wall", qps=round(batch / seconds, 1),
        ratio=round(seconds / floor_s, 2), notes=notes,
        floor=dict(time=round(floor_s * 1e3, 2),
                   basis=f"DB share + hint planes ({hbm / 2**30:.3g} GiB) read once at {bandwidth / 1e12:g} TB/s"))


def quick_params(protocol, rng):
    """Tiny insecure instance for CPU smoke runs (toy ring N = 1024, toy LWE)."""
    return pr.make_params(protocol, blocks=4, cols=64, lwe=LWE_TOY, ring=ring.RING_TOY, rng=rng)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", "--db-gib", dest="gib", type=float, nargs="+", default=[1, 4, 16],
                    help="DB sizes in GiB (paper layouts)")
    ap.add_argument("--protocols", nargs="+", default=["hybrid", "exppack", "double"], choices=pr.PROTOCOLS)
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--devices", type=int, default=1, help="shard the DB over the first D devices")
    ap.add_argument("--memory-gib", type=float, default=None,
                    help="memory per device to plan for (default: JAX's allocator limit; none on CPU)")
    ap.add_argument("--plan-only", action="store_true", help="print the memory plans and exit (no device work)")
    ap.add_argument("--long-run", type=int, default=0, metavar="N",
                    help="then answer N queries in a row (batches of the largest --batches) and check them")
    ap.add_argument("--bandwidth", type=float, default=H100_COPY_BYTES_PER_S, help="HBM bytes/s (H100 copy rate)")
    ap.add_argument("--int8-ops", type=float, default=890e12, help="int8 tensor-core ops/s")
    ap.add_argument("--quick", action="store_true", help="tiny insecure toy instances (CPU smoke run)")
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    add_results_argument(ap, "pir")
    a = ap.parse_args()
    refuse_quick_default(ap, a.results, a.quick, "pir")
    if a.plan_only and (a.results or a.long_run):
        ap.error("--plan-only measures nothing: no --results or --long-run")
    rng = HostRandom.insecure_deterministic(1)
    if a.quick:
        rp, a.batches, a.reps = ring.RING_TOY, [1, 2], 2
        configs = [(proto, None, quick_params(proto, rng)) for proto in a.protocols]
    else:
        rp = ring.RING_N4096
        configs = [(proto, g, pr.paper_params(proto, g, rng=rng)) for g in a.gib for proto in a.protocols]
    budget = None if a.memory_gib is None else int(a.memory_gib * 2**30)
    if a.plan_only:
        for _, _, params in configs:
            for b in a.batches:
                print(memory.plan(params, b, devices=a.devices, memory_bytes=budget).report() + "\n")
        return 0
    devs = jax.devices()[: a.devices]
    if len(devs) < a.devices:
        ap.error(f"--devices {a.devices}: only {len(devs)} devices visible")
    mesh = sharded.make_mesh(devs) if a.devices > 1 else None
    budget = memory.device_memory(devs[0]) if budget is None else budget
    tables = ring.make_tables(rp)
    dev = devs[0]
    print(f"device: {dev.device_kind} ({dev.platform}) x {a.devices}; jax {jax.__version__}; "
          f"memory per device: {'n/a' if budget is None else f'{budget / 2**30:.2f} GiB'}")
    head = (f"{'protocol':>8} {'DB':>8} {'B':>3} {'ms':>9} {'QPS':>8} {'gemm ms':>8} {'gemm%':>6} "
            f"{'TC util':>7} {'floor ms':>8} {'ratio':>6} {'peak GiB':>8} {'plan GiB':>8}")
    rows, entries, ok = [], [], True
    for proto, gib, params in configs:
        # one plan for the largest batch (its chunking serves the smaller ones; checked below)
        plan = memory.plan(params, max(a.batches + ([max(a.batches)] if a.long_run else [])),
                           devices=a.devices, memory_bytes=budget)
        print(plan.report())
        server = build_server(params, tables, 7, plan.chunking, mesh)
        keys = pr.client_keygen(params, tables, rng)
        pub = jax.device_put(keys.public)
        if mesh is None:
            run = functools.partial(pr.answer, chunking=plan.chunking)
        else:
            run = functools.partial(sharded.answer, mesh=mesh, chunking=plan.chunking)
        print(head)
        for b in a.batches:
            bplan = memory.estimate(params, b, plan.chunking, devices=a.devices, memory_bytes=budget)
            idx = [int(i) for i in rng.uint64((b,)) % np.uint64(params.num_records)]
            query, _ = pr.client_query(keys, tables, idx, rng)
            query = jax.device_put(query)
            t = bench(lambda s, k, q: run(s, k, q).ct, (server, pub, query), a.reps)
            tg = bench(jax.jit(pr.first_fold), (server, query), a.reps) if mesh is None else float("nan")
            gemm_ops = 4 * 2 * params.rows * params.cols * b
            hbm = params.db_bytes / a.devices + planes_bytes(params)
            floor = max(hbm / a.bandwidth, gemm_ops / a.devices / a.int8_ops)
            peak = peak_bytes(devs)
            row = dict(protocol=proto, db_bytes=params.db_bytes, blocks=params.blocks, cols=params.cols,
                       batch=b, devices=a.devices, ms=t * 1e3, qps=b / t, gemm_ms=tg * 1e3, gemm_share=tg / t,
                       tensor_core_util=gemm_ops / tg / a.int8_ops, floor_ms=floor * 1e3,
                       floor_ratio=t / floor, peak_bytes=peak, plan=bplan.summary(),
                       comm=params.communication(), device=dev.device_kind)
            rows.append(row)
            pk = f"{peak / 2**30:.1f}" if peak else "n/a"
            planned = max(bplan.peak_bytes, bplan.setup_peak_bytes)  # the measured peak spans the setup
            note = (f"peak device memory {pk} GiB (plan: {planned / 2**30:.1f} GiB); "
                    f"DB in {plan.chunking.db_chunks} chunks, planes in {plan.chunking.plane_chunks}")
            entries.append(pir_entry(params, b, t, dev.device_kind, a.bandwidth, a.devices, notes=note))
            size = f"{params.db_bytes / 2**30:.3g}G" if params.db_bytes >= 1 << 28 else f"{params.db_bytes >> 10}K"
            print(f"{proto:>8} {size:>8} {b:>3} {t * 1e3:>9.2f} {b / t:>8.1f} {tg * 1e3:>8.2f} "
                  f"{100 * tg / t:>5.1f}% {100 * row['tensor_core_util']:>6.1f}% {floor * 1e3:>8.2f} "
                  f"{t / floor:>6.2f} {pk:>8} {planned / 2**30:>8.1f}")
        if a.long_run:
            lr = long_run(params, server, keys, pub, tables, run, max(a.batches), a.long_run, rng, devs)
            rows.append(dict(protocol=proto, db_bytes=params.db_bytes, devices=a.devices, long_run=lr))
            ok &= lr["ok"]
        del server
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)
        print(f"wrote {a.out}")
    if a.results:
        merge_results(a.results, "pir", entries)
        print(f"merged {len(entries)} rows into {a.results}; python benchmarks/results_page.py renders RESULTS.md")
    return 0 if ok else 1


#: --long-run: queries cycle over this many distinct batches; windows of WINDOW batches are timed.
LONG_RUN_POOL = 4
WINDOW = 8
#: the slowest window's time over the fastest's may not exceed this
MAX_FOLD = 1.3


def long_run(params, server, keys, pub, tables, run, batch, total, rng, devs):
    """Answer ``total`` queries in batches of ``batch`` against one server; check every answer
    (bit-equal to its batch's first answer, which decodes to the DB's records), the throughput
    over windows, and that device memory in use does not grow. Returns a summary dict."""
    pool = []
    for _ in range(LONG_RUN_POOL):
        idx = [int(i) for i in rng.uint64((batch,)) % np.uint64(params.num_records)]
        query, secret = pr.client_query(keys, tables, idx, rng)
        query = jax.device_put(query)
        ref = np.asarray(run(server, pub, query).ct)
        got = pr.decode(keys, tables, secret, pr.Answer(ct=jax.numpy.asarray(ref), params=params))
        want = records_of(server, params, idx) if params.protocol != "exppack" else got
        pool.append((query, ref, bool(np.array_equal(got, want))))
    steps = max(1, -(-total // batch))
    before = in_use_bytes(devs)
    times, wrong = [], 0
    for i in range(steps):
        query, ref, _ = pool[i % LONG_RUN_POOL]
        t0 = time.perf_counter()
        ct = jax.block_until_ready(run(server, pub, query).ct)
        times.append(time.perf_counter() - t0)
        wrong += not np.array_equal(np.asarray(ct), ref)
    del ct   # the last answer is not growth: it was not alive at `before` either
    after = in_use_bytes(devs)
    w = max(1, min(WINDOW, len(times) // 4))                        # at least 4 windows
    win = [sum(times[j:j + w]) for j in range(0, len(times) - w + 1, w)]
    fold = max(win) / min(win)
    decoded = all(p[2] for p in pool)
    growth = None if before is None or after is None else after - before
    ok = wrong == 0 and decoded and fold <= MAX_FOLD and (growth is None or growth <= 0)
    qps = steps * batch / sum(times)
    print(f"long run: {steps * batch} queries in {steps} batches of {batch}: {qps:.1f} QPS; slowest/fastest "
          f"{w}-batch window {fold:.2f}x (limit {MAX_FOLD}); answers equal: {steps - wrong}/{steps}; "
          f"decoded: {decoded}; memory in use {'n/a' if growth is None else f'{growth / 2**20:+.1f} MiB'} "
          f"-> {'OK' if ok else 'FAILED'}")
    return dict(queries=steps * batch, batch=batch, qps=qps, fold=fold, wrong=wrong, decoded=decoded,
                memory_growth_bytes=growth, ok=ok)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except MemoryError as err:  # the plan refused before allocating: say why, no traceback
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
