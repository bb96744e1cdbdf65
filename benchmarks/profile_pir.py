"""Per-stage time and memory of a VIPIR server answer (hybrid by default).

    python benchmarks/profile_pir.py --gib 1 16 --batches 1 32 --reps 3 --out prof.json   # GPU
    python benchmarks/profile_pir.py --memory --gib 1 4 16 --batches 1 32                 # any machine
    python benchmarks/profile_pir.py --quick                                              # CPU smoke run
    python benchmarks/profile_pir.py --gib 16 --batches 1 32 --results                   # update the page

Timing mode builds the server as ``bench_pir.py`` does (random DB on the device, hint planes)
and times every stage as its own jitted function, fed the previous stage's output (median of
--reps after a warm-up, ``block_until_ready``):

    first_fold    DB GEMM y = DB @ b                            (server.db)
    expand_query  ct_ExpPack -> n (+ selector) ciphertexts      (expansion keys)
    pack_first    blocks RLWE ciphertexts from y and the hint   (server.planes)
    hybrid_fold   RGSW selectors + CMUX tree (double-packing: double_second; none for ExpPack(S))
    mod_switch    Q -> q_0
    answer        the whole jitted ``answer`` (one executable: XLA may overlap/fuse stages)

and checks that the chained stages give exactly the answer's ciphertexts. The share column is
each stage over the full answer. ``--results`` merges the full answer's times into
benchmarks/results/pir.json (as ``bench_pir.py --results`` does), from which ``results_page.py``
renders benchmarks/RESULTS.md.

--memory allocates nothing large: it builds an abstract (``jax.eval_shape``) server and the
client's (small) keys and query for the requested size, then lowers and compiles each stage, the full ``answer`` and the
setup executables (random DB, one hint step, the in-place hint insert), and prints
``compiled.memory_analysis()`` (argument, output, alias and temporary bytes). It runs on this
backend's compiler, so on a CPU machine it shows the CPU compiler's buffers (run it on the GPU
for the GPU's). --hlo-dir writes each compiled module's optimized HLO for inspection.
"""
from __future__ import annotations

import argparse
import json
import os

import jax
import numpy as np

from gpu_trace import print_kernel_summary, trace_kernels
from jax_fhe.pir import exppack as ep
from jax_fhe.pir import protocols as pr
from jax_fhe.pir import ring
from jax_fhe.rns import HostRandom

from bench_pir import (H100_COPY_BYTES_PER_S, build_server, peak_bytes, pir_entry, planes_bytes,
                       quick_params, random_db)
from db_gemm import bench
from results import add_argument as add_results_argument
from results import merge as merge_results
from results import refuse_quick_default

GIB = 1 << 30


def _mod_switch(server, folded):
    return ring.mod_switch(folded, server.tables)


def _answer_ct(server, keys, query):
    return pr._answer(server, keys, query, pr._stages(None)).ct      # the jitted answer, as pr.answer calls it


_JITTED = {}


def jitted(fn):
    """One jax.jit wrapper per stage function, so that stages whose shapes do not depend on the
    DB size (all but first_fold and answer for the hybrid: rows = blocks N = 2^20) compile once."""
    return _JITTED.setdefault(fn, jax.jit(fn))


def stages(protocol):
    """[(name, function, input names, output name)] in execution order; ``answer`` last."""
    out = [("first_fold", pr.first_fold, ("server", "query"), "y"),
           ("expand_query", pr.expand_query, ("server", "keys", "query"), "expanded"),
           ("pack_first", pr.pack_first, ("server", "expanded", "y"), "packed")]
    folded = "packed"
    if protocol != "exppack":
        name = "hybrid_fold" if protocol == "hybrid" else "double_second"
        out.append((name, pr.second_stage, ("server", "keys", "query", "expanded", "packed"), "folded"))
        folded = "folded"
    out.append(("mod_switch", _mod_switch, ("server", folded), "ct"))
    out.append(("answer", _answer_ct, ("server", "keys", "query"), "answer"))
    return out


def client_side(params, tables, rng, batch):
    """(public keys, query) for ``batch`` random record indices (host RNG)."""
    keys = pr.client_keygen(params, tables, rng)
    idx = [int(i) for i in rng.uint64((batch,)) % np.uint64(params.num_records)]
    query, _ = pr.client_query(keys, tables, idx, rng)
    return keys.public, query


# --- timing ----------------------------------------------------------------------------------


def time_stages(params, tables, batches, reps, rng, pack_temps=(), trace=None):
    """Per batch size, rows {batch, stage, ms, share, qps, peak_bytes} (a generator: one list
    per batch, so that a long run reports as it goes). For each extra packing bound in
    ``pack_temps`` (bytes), ``pack_first`` and ``answer`` are re-traced and timed again on the
    same server and query, as stages named ``pack_first@<GiB>`` and ``answer@<GiB>``. ``trace``:
    a folder; prints the GPU kernels of one extra call of each stage in TRACE_STAGES."""
    server = build_server(params, tables, 7)
    for b in batches:
        pub, query = jax.device_put(client_side(params, tables, rng, b))
        env = dict(server=server, keys=pub, query=query)
        times = {}
        for name, fn, ins, out in stages(params.protocol):
            f = jitted(fn)
            args = [env[k] for k in ins]
            times[name] = bench(f, args, reps)
            env[out] = jax.block_until_ready(f(*args))
            if trace and name in TRACE_STAGES:
                print_kernel_summary(f"{name}, B = {b}", trace_kernels(f, args, f"{trace}/{name}_b{b}"))
        if not np.array_equal(np.asarray(env["ct"]), np.asarray(env["answer"])):
            raise AssertionError("profile_pir: the chained stages differ from the full answer")
        times["sum_of_stages"] = sum(t for name, t in times.items() if name != "answer")
        saved = ep.PACK_TEMP_BYTES
        try:
            for pt in pack_temps:
                ep.PACK_TEMP_BYTES = int(pt)
                for name, fn, ins, _ in stages(params.protocol):
                    if name not in ("pack_first", "answer"):
                        continue
                    f = jax.jit(fn)  # a fresh trace reads the new bound
                    args = [env[k] for k in ins]
                    times[f"{name}@{pt / GIB:.3g}GiB"] = bench(f, args, reps)
                    if name == "answer" and not np.array_equal(np.asarray(f(*args)), np.asarray(env["answer"])):
                        raise AssertionError("profile_pir: the answer depends on the packing bound")
        finally:
            ep.PACK_TEMP_BYTES = saved
        del env
        peak = peak_bytes()
        yield [dict(batch=b, stage=name, ms=t * 1e3, share=t / times["answer"], qps=b / t, peak_bytes=peak)
               for name, t in times.items()]


# --trace: GPU kernel time per kernel name for these stages (benchmarks/gpu_trace.py)
TRACE_STAGES = ("expand_query", "pack_first", "hybrid_fold", "double_second")


def print_times(rows):
    print(f"{'B':>3} {'stage':>14} {'ms':>10} {'share':>7} {'QPS':>8}")
    for r in rows:
        qps = f"{r['qps']:>8.1f}" if r["stage"] == "answer" else ""
        print(f"{r['batch']:>3} {r['stage']:>14} {r['ms']:>10.3f} {100 * r['share']:>6.1f}% {qps}")
    if rows and rows[-1]["peak_bytes"]:
        print(f"peak device memory so far (setup included): {rows[-1]['peak_bytes'] / GIB:.2f} GiB")


# --- memory (compile only) ---------------------------------------------------------------------


def _abstract(tree):
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), tree)


def _memory_row(name, compiled, hlo_dir, label):
    ma = compiled.memory_analysis()
    row = dict(stage=name)
    for key in ("argument", "output", "alias", "temp", "generated_code"):
        row[key + "_bytes"] = getattr(ma, f"{key}_size_in_bytes", None) if ma is not None else None
    if hlo_dir:
        os.makedirs(hlo_dir, exist_ok=True)
        with open(os.path.join(hlo_dir, f"{label}_{name}.hlo.txt"), "w") as f:
            f.write(compiled.as_text())
    return row


def memory_stages(params, tables, batches, rng, hlo_dir=None, setup=True):
    """Rows {batch, stage, argument/output/alias/temp bytes} from compiling each stage with
    abstract arguments (nothing DB-sized is allocated); a generator: the setup rows (batch 0),
    then one list per batch size."""
    n_ring, limbs = params.ring.n, params.ring.limbs
    server = pr.Server(db=jax.ShapeDtypeStruct((params.rows, params.cols), np.int8),
                       planes=jax.ShapeDtypeStruct((n_ring, limbs, 4 * params.blocks, params.lwe.n), np.int8),
                       tables=tables, params=params)                  # abstract: nothing allocated
    label = f"{params.protocol}_{params.db_bytes}"
    if setup:
        n, step = params.ring.n, min(8, params.blocks)          # server_setup's blocks_per_step
        db_rows = jax.ShapeDtypeStruct((step * n, params.cols), server.db.dtype)
        a = jax.ShapeDtypeStruct((params.cols, params.lwe.n), np.uint32)
        chunk = jax.eval_shape(pr._hint_rows, db_rows, 0, step * n, a, tables)
        chunk = jax.ShapeDtypeStruct((n, params.ring.limbs, 4, step, params.lwe.n), chunk.dtype)
        setup_fns = [("random_db", random_db.lower(params.rows, params.cols, 7)),
                     ("hint_step", pr._hint_rows.lower(db_rows, 0, step * n, a, tables)),
                     ("hint_insert", pr._insert.lower(server.planes, chunk, 0))]
        yield [dict(batch=0, **_memory_row(name, lowered.compile(), hlo_dir, label)) for name, lowered in setup_fns]
    for b in batches:
        # the client's keys and query are small: made for real (encryption draws host randomness,
        # so it refuses to be traced), then kept as shapes only
        pub, query = _abstract(client_side(params, tables, rng, b))
        env = dict(server=server, keys=pub, query=query)
        rows = []
        for name, fn, ins, out in stages(params.protocol):
            args = [env[k] for k in ins]
            compiled = jitted(fn).lower(*args).compile()
            rows.append(dict(batch=b, **_memory_row(name, compiled, hlo_dir, f"{label}_b{b}")))
            env[out] = _abstract(jax.eval_shape(fn, *args))
        yield rows


def print_memory(rows):
    for r in rows:
        parts = [r[k + "_bytes"] for k in ("argument", "output", "alias", "temp")]
        r["total_bytes"] = None if None in parts else parts[0] + parts[1] - parts[2] + parts[3]
    big = max((r["total_bytes"] or 0 for r in rows), default=0) >= GIB
    unit, scale = ("GiB", GIB) if big else ("MiB", 1 << 20)
    print(f"{'B':>3} {'stage':>14} {'args':>8} {'out':>8} {'alias':>8} {'temp':>8} {'total':>8}   "
          f"({unit}, compiled.memory_analysis(); total = args + out - alias + temp)")
    g = lambda v: f"{v / scale:>8.3f}" if v is not None else f"{'n/a':>8}"  # noqa: E731
    for r in rows:
        parts = [r[k + "_bytes"] for k in ("argument", "output", "alias", "temp", "total")]
        print(f"{r['batch']:>3} {r['stage']:>14} " + " ".join(g(v) for v in parts))


# --- main ----------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--protocol", default="hybrid", choices=pr.PROTOCOLS)
    ap.add_argument("--gib", type=float, nargs="+", default=[1])
    ap.add_argument("--batches", type=int, nargs="+", default=None, help="default 1 32 (--quick: 1 2)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--memory", action="store_true", help="compile only: memory_analysis per stage")
    ap.add_argument("--no-setup", action="store_true", help="--memory: skip the setup executables")
    ap.add_argument("--hlo-dir", default=None, help="--memory: write optimized HLO per stage here")
    ap.add_argument("--pack-temp-gib", type=float, default=None,
                    help="bound on the packing GEMM's int32 products (exppack.PACK_TEMP_BYTES)")
    ap.add_argument("--also-pack-temp-gib", type=float, nargs="*", default=[],
                    help="timing: re-time pack_first and answer with these bounds too (same server)")
    ap.add_argument("--quick", action="store_true", help="tiny insecure toy instance (CPU smoke run)")
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    ap.add_argument("--trace", default=None, help="print GPU kernel times of the expansion, pack and "
                    "fold stages (one extra traced call each; trace files under this folder)")
    ap.add_argument("--bandwidth", type=float, default=H100_COPY_BYTES_PER_S,
                    help="--results: HBM bytes/s of the floor (default: the H100's copy rate)")
    add_results_argument(ap, "pir")
    a = ap.parse_args(argv)
    if a.results and a.memory:
        ap.error("--results takes timings; --memory only compiles")
    refuse_quick_default(ap, a.results, a.quick, "pir")
    rng = HostRandom.insecure_deterministic(1)
    if a.quick:
        rp, a.reps = ring.RING_TOY, min(a.reps, 2)
        a.batches = a.batches or [1, 2]
        configs = [(None, quick_params(a.protocol, rng))]
    else:
        rp = ring.RING_N4096
        a.batches = a.batches or [1, 32]
        configs = [(g, pr.paper_params(a.protocol, g, rng=rng)) for g in a.gib]
    tables = ring.make_tables(rp)
    dev = jax.devices()[0]
    print(f"device: {dev.device_kind} ({dev.platform}); jax {jax.__version__}")
    saved = ep.PACK_TEMP_BYTES
    if a.pack_temp_gib is not None:
        ep.PACK_TEMP_BYTES = int(a.pack_temp_gib * GIB)
    results = []
    try:
        for gib, params in configs:
            for rows in run_config(a, gib, params, tables, rng, dev):
                results += rows
                if a.out:  # after every batch: a run cut short keeps what it measured
                    with open(a.out, "w") as f:
                        json.dump(results, f, indent=1)
                if a.results:
                    entries = [pir_entry(params, r["batch"], r["ms"] / 1e3, dev.device_kind, a.bandwidth)
                               for r in rows if r["stage"] == "answer"]
                    merge_results(a.results, "pir", entries)
    finally:
        ep.PACK_TEMP_BYTES = saved
    if a.out:
        print(f"wrote {a.out}")
    if a.results:
        print(f"merged the answer rows into {a.results}; python benchmarks/results_page.py renders RESULTS.md")
    return results


def run_config(a, gib, params, tables, rng, dev):
    """Time (or, with --memory, compile) one protocol instance; print and yield its rows."""
    size = f"{params.db_bytes / GIB:.3g} GiB" if gib else f"{params.db_bytes >> 10} KiB (toy)"
    planes = planes_bytes(params)
    print(f"\n{params.protocol}, DB {size} (blocks {params.blocks}, D_0 {params.cols}), planes "
          f"{planes / GIB:.3g} GiB, pack temp bound {ep.PACK_TEMP_BYTES / GIB:.3g} GiB", flush=True)
    if a.memory:
        chunks, show = memory_stages(params, tables, a.batches, rng, a.hlo_dir, setup=not a.no_setup), print_memory
    else:
        extra = [int(g * GIB) for g in a.also_pack_temp_gib]
        chunks, show = time_stages(params, tables, a.batches, a.reps, rng, extra, a.trace), print_times
    for rows in chunks:
        for r in rows:
            r.update(protocol=params.protocol, db_bytes=params.db_bytes, blocks=params.blocks, cols=params.cols,
                     pack_temp_bytes=ep.PACK_TEMP_BYTES, device=dev.device_kind,
                     mode="memory" if a.memory else "time")
        show(rows)
        print(flush=True)
        yield rows

if __name__ == "__main__":
    main()
