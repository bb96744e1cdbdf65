"""Private dataset queries (jax_fhe.apps.pdq, CAT's PDQ): per query, the server time (the jitted
programs, both phases of the interactive queries), the client's encryption of the columns the
query reads, the inverse round trip, decryption, the full task, and GPU memory; correctness
over random tables; and a rows scale (several ciphertexts per column, vmapped).

    python benchmarks/bench_pdq.py --tables 20 --out $OUT/pdq.json     # n16-boot, 1,024 rows (GPU)
    python benchmarks/bench_pdq.py --scale 1024,4096,16384,65536         # rows scale
    python benchmarks/bench_pdq.py --quick                               # INSECURE toy-n11, 32 rows (CPU)
    python benchmarks/bench_pdq.py --merge $OUT/pdq.json                 # into benchmarks/results/apps.json

Queries (CAT, notes/cat.md §3), columns a..e uniform in [0, 2^32) with edge values planted
(examples/private_query.py's random_table):
PDQ-1 Index() where a <= b and c != d; PDQ-2 Sum(a) where b <= c and d != e; PDQ-3 a / b^2
where b <= c; PDQ-4 Avg(a) where b <= c and d == e. Timing: --runs warm executions after one
compiling run, median; "server" waits for the device (block_until_ready) and excludes the
client's inverse; "full task" = encryption of the query's columns (bit planes, and values for
Avg / the ratio) + server + the server's encoding of its blinding factors + client inverse +
decryption. Every run is checked against the plaintext reference (examples/private_query.py's
check): Index, Count, Sum exact; Avg exact as Sum / Count and within 2^-20 through the
encrypted inverse; the ratio exact as Fractions of the filtered operands (the encrypted
inverse's floats are reported, not required: over the whole 2^32 range of the divisor they lose
the small ones, docs/pdq.md). ``--out FILE`` writes the results-format
entries (area "apps") with the raw numbers; ``--merge FILE`` merges such a file's entries into
the results page's apps area; ``--results`` merges this run's directly.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import jax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))

import private_query as ex  # noqa: E402  (the example's tables, queries and checks)
import results  # noqa: E402
from jax_fhe.apps import pdq  # noqa: E402

PEER = {"PDQ-1": (167, 241), "PDQ-2": (357, 395), "PDQ-3": (254, 377), "PDQ-4": (887, 2400)}


def _gib(tree) -> float:
    return sum(int(x.size) * x.dtype.itemsize for x in jax.tree_util.tree_leaves(tree) if hasattr(x, "dtype")) / 2**30


def _peak_gib(dev):
    try:
        stats = dev.memory_stats() or {}
    except Exception:  # noqa: BLE001  (CPU devices have none)
        return None
    peak = stats.get("peak_bytes_in_use")
    return None if peak is None else peak / 2**30


def measure(name, q, rows, client, ctx, runs, tables, opts, seed=0):
    """One query at one table size: timings (ms), correctness over ``tables`` random tables."""
    cols = ex.random_table(rows, seed)
    used = {k: cols[k] for k in sorted(q.columns())}
    vals = q.cols if q.kind in ("avg", "ratio") else ()
    t0 = time.perf_counter()
    table = client.encrypt_table(used, values=vals)
    jax.block_until_ready(table)
    enc = time.perf_counter() - t0
    t0 = time.perf_counter()
    ans, cq = ex.run_query(q, table, ctx, client, compiler_options=opts)
    first = time.perf_counter() - t0
    ok, text = ex.check(ans, pdq.reference(q, cols), q, inverse_bound=False)
    server, inverse, dec, blind = [], [], [], []
    for _ in range(runs):
        ans, _ = ex.run_query(q, table, ctx, client, cq)
        good, _ = ex.check(ans, pdq.reference(q, cols), q, inverse_bound=False)
        ok &= good
        server.append(1e3 * ans.timings["server"])
        inverse.append(1e3 * ans.timings.get("client_inverse", 0.0))
        dec.append(1e3 * ans.timings["decrypt"])
        blind.append(1e3 * ans.timings.get("blinding_encode", 0.0))
    for i in range(tables):
        c2 = ex.random_table(rows, 100 + i)
        t2 = client.encrypt_table({k: c2[k] for k in sorted(q.columns())}, values=vals)
        a2, _ = ex.run_query(q, t2, ctx, client, cq)
        good, t = ex.check(a2, pdq.reference(q, c2), q, inverse_bound=False)
        if not good:
            print(f"  MISMATCH {name} table {i}: {t}")
        ok &= good
    s, inv, d = statistics.median(server), statistics.median(inverse), statistics.median(dec)
    bl = statistics.median(blind)
    return {"query": str(q), "rows": rows, "chunks": client.layout.chunks, "server_ms": s,
            "server_ms_runs": server, "encrypt_ms": 1e3 * enc, "client_inverse_ms": inv, "decrypt_ms": d,
            "blinding_encode_ms": bl, "full_task_ms": 1e3 * enc + s + bl + inv + d, "first_run_s": first, "levels": cq.levels,
            "tables_checked": tables + 1 + runs, "ok": bool(ok), "answer": text}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="n16-boot")
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=5, help="warm executions timed per query")
    ap.add_argument("--tables", type=int, default=0, help="extra random tables checked per query")
    ap.add_argument("--queries", default="PDQ-1,PDQ-2,PDQ-3,PDQ-4")
    ap.add_argument("--scale", default=None, help="comma-separated row counts: the rows scale (PDQ-2 and PDQ-4)")
    ap.add_argument("--quick", action="store_true", help="INSECURE toy-n11, 32 rows, 1 run (CPU)")
    ap.add_argument("--out", default=None, help="write the entries and raw numbers as JSON here")
    ap.add_argument("--merge", default=None, metavar="FILE", help="merge FILE's entries (from --out) into the results page and exit")
    results.add_argument(ap, "apps")
    args = ap.parse_args()
    if args.merge:
        doc = json.loads(open(args.merge).read())
        results.merge(results.default_path("apps"), "apps", doc["entries"])
        print(f"merged {len(doc['entries'])} entries into {results.default_path('apps')}")
        return
    if args.quick:
        args.preset, args.rows, args.runs = "toy-n11", 32, 1
    results.refuse_quick_default(ap, args.results, args.quick, "apps")
    dev = jax.devices()[0]
    opts = {"xla_backend_optimization_level": 0} if jax.default_backend() == "cpu" else None
    t0 = time.perf_counter()
    ctx, client = ex.setup(args.preset, args.rows, progress=True)
    jax.block_until_ready(client.keys)
    setup_s = time.perf_counter() - t0
    keys_gib = _gib(client.evaluation_keys)
    print(f"{ctx.params!r}\ndevice {dev.device_kind}; {args.rows} rows ({client.layout.chunks} ciphertext(s) per "
          f"column), table level {client.level}; keys {setup_s:.1f} s, evaluation keys {keys_gib:.2f} GiB")
    queries = ex.cat_queries(pdq)
    rows_out = {}
    print(f"\n{'query':6} {'server ms':>10} {'full ms':>9} {'encrypt':>8} {'inverse':>8} {'decrypt':>8} "
          f"{'first s':>8}  CAT server/full (RTX 4090)")
    for name in args.queries.split(","):
        r = measure(name, queries[name], args.rows, client, ctx, args.runs, args.tables, opts)
        r["peak_gib"] = _peak_gib(dev)
        rows_out[name] = r
        print(f"{name:6} {r['server_ms']:10.2f} {r['full_task_ms']:9.2f} {r['encrypt_ms']:8.2f} "
              f"{r['client_inverse_ms']:8.2f} {r['decrypt_ms']:8.2f} {r['first_run_s']:8.1f}  "
              f"{PEER[name][0]} / {PEER[name][1]} ms  {'OK' if r['ok'] else 'MISMATCH'}")
    scale = {}
    if args.scale:
        print("\nrows scale (server ms; a new layout compiles once per size):")
        for n in (int(x) for x in args.scale.split(",")):
            from jax_fhe.apps.pdq import Client
            c2 = Client(ctx, n, rng=client.rng, keys=client.keys, level=client.level)
            for name in ("PDQ-2", "PDQ-4"):
                r = measure(name, queries[name], n, c2, ctx, max(1, args.runs // 2), 0, opts, seed=n)
                scale.setdefault(name, []).append(r)
                print(f"  {name} {n:6d} rows ({r['chunks']:3d} chunks): server {r['server_ms']:9.2f} ms "
                      f"({r['server_ms'] / r['chunks']:.2f} ms per chunk), full {r['full_task_ms']:.1f} ms  "
                      f"{'OK' if r['ok'] else 'MISMATCH'}")
    peak = _peak_gib(dev)
    if peak is not None:
        print(f"\nGPU memory: peak {peak:.2f} GiB in use (keys {keys_gib:.2f} GiB)")
    all_ok = all(r["ok"] for r in rows_out.values()) and all(r["ok"] for v in scale.values() for r in v)
    print("OK" if all_ok else "MISMATCH")

    entries = []
    for name, r in rows_out.items():
        note = (f"server = the jitted programs (both phases for the interactive queries), median of {args.runs} "
                f"warm runs; full task {r['full_task_ms']:.1f} ms = encryption of the {len(queries[name].columns())} "
                f"columns read {r['encrypt_ms']:.1f} + server + blinding encode {r['blinding_encode_ms']:.1f} + "
                f"client inverse {r['client_inverse_ms']:.1f} + "
                f"decryption {r['decrypt_ms']:.1f}; exact answers checked on {r['tables_checked']} tables; "
                f"levels {r['levels']}; peak GPU memory {r['peak_gib'] or 0:.2f} GiB (keys {keys_gib:.2f} GiB)")
        e = results.entry(f"pdq/{args.preset}/{name}/rows={args.rows}", f"private query {name}: {r['query']}",
                          f"{args.preset}, {args.rows} rows, 32-bit columns (bit planes), table at level {client.level}",
                          dev.device_kind, unit="ms", time=results.rounded(r["server_ms"], 2), clock="wall", notes=note)
        e["peer"] = {"figure": f"CAT {PEER[name][0]} ms server / {PEER[name][1]} ms full task (RTX 4090)",
                     "source": "CAT paper, Table V"}
        e["goal"] = "<= 50 ms server time on an H100; exact Index/Sum, Avg and division to the stated precision"
        entries.append(e)
    for name, rs in scale.items():
        for r in rs:
            # its own key: the 1,024-row point of the scale must not replace the query's main row
            entries.append(results.entry(
                f"pdq/{args.preset}/{name}/scale/rows={r['rows']}", f"private query {name} (rows scale)",
                f"{args.preset}, {r['rows']} rows ({r['chunks']} ciphertext{'s' * (r['chunks'] != 1)} per column, vmapped)",
                dev.device_kind, unit="ms", time=results.rounded(r["server_ms"], 2), clock="wall",
                notes=(f"server time, median of {len(r['server_ms_runs'])} warm run(s); full task "
                       f"{r['full_task_ms']:.1f} ms; {r['server_ms'] / r['chunks']:.2f} ms per chunk; first run "
                       f"(compiling) {r['first_run_s']:.0f} s")))
    doc = {"area": "apps", "entries": entries, "raw": {"queries": rows_out, "scale": scale, "setup_s": setup_s,
                                                          "keys_gib": keys_gib, "peak_gib": peak}}
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(doc, fh, indent=1, default=float)
        print(f"wrote {args.out}")
    if args.results:
        results.merge(args.results, "apps", entries)
        print(f"merged into {args.results}")


if __name__ == "__main__":
    main()
