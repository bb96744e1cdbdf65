"""Where a lone BFV/BGV operation's wall time goes at cat-n15 (device machine): each operation
compiled under XLA option variants (``--variants``), timed in interleaved rounds as

* ``b2b``: back to back (``calls`` calls, one sync at the end; bench_bfv_bgv.py's "one call"),
* ``ret``: the time a call takes to return (host dispatch: argument checks, executable launch),
* ``sync``: one call and its sync,

and one call traced: GPU kernels (count, busy, span), CUDA graph launches, and the host events
of at least ``--min-us`` by name. ``encrypt`` (not jitted) is profiled with cProfile.

    python tools/lone_op_probe.py --out $OUT [--ops rotate_columns,relinearize] [--rounds 3]
"""
from __future__ import annotations

import argparse
import cProfile
import glob
import gzip
import io
import json
import os
import pstats
import statistics
import sys
import time

import jax
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))

from gpu_trace import trace_kernels  # noqa: E402
from jax_fhe import bfv, bgv, ops  # noqa: E402
from jax_fhe.rns import HostRandom  # noqa: E402

VARIANTS = {
    "default": {},
    "no_cmdbuf": {"xla_gpu_enable_command_buffer": ""},
    "min_graph_1": {"xla_gpu_graph_min_graph_size": 1},
    "skip_temp": {"xla_gpu_command_buffer_update_mode": "SKIP_TEMP"},
    "skip_profiled": {"xla_gpu_command_buffer_update_mode": "SKIP_PROFILED"},
}


def setup(mod, preset):
    p = mod.preset(preset)
    full = mod.make_context(p)
    ctx = full.for_levels([p.max_level]) if mod is bgv else full
    rng = HostRandom.insecure_deterministic(1)  # probe data only
    sk = mod.gen_secret_key(full, rng)
    evk = mod.EvalKeys(relin=mod.gen_relin_key(full, sk, rng),
                       rotations=mod.gen_rotation_keys(full, sk, [1], rng, progress=False),
                       columns=mod.gen_galois_key(full, sk, ops.conjugation_element(p.n), rng), params=p)
    pk = mod.gen_public_key(full, sk, rng)
    dev = jax.devices()[0]
    ctx, evk, sk, pk = jax.device_put((ctx, evk, sk, pk), dev)
    vals = np.random.default_rng(0).integers(0, p.plain_modulus, p.n)
    pt = mod.encode(vals, ctx)
    x = mod.encrypt(pt, ctx, sk, rng)
    d = jax.jit(lambda x, ctx: mod.mul(x, x, ctx, relinearize=False))(x, ctx)
    return p, ctx, evk, sk, pk, pt, x, d


def operations(mod, ctx, evk, x, d):
    return {
        "x1_bare": (lambda x: x.data + 1, (x,)),
        "x1_ctx": (lambda x, ctx: x.data + 1, (x, ctx)),
        "x1_leaves": (lambda x, leaves: x.data + 1, (x, jax.tree.leaves(ctx))),
        "add": (lambda x, ctx: mod.add(x, x, ctx), (x, ctx)),
        "multiply": (lambda x, ctx: mod.mul(x, x, ctx, relinearize=False), (x, ctx)),
        "relinearize": (lambda d, ctx, evk: mod.relinearize(d, ctx, evk), (d, ctx, evk)),
        "rotate_one_step": (lambda x, ctx, evk: mod.rotate_rows(x, 1, ctx, evk), (x, ctx, evk)),
        "rotate_columns": (lambda x, ctx, evk: mod.rotate_columns(x, ctx, evk), (x, ctx, evk)),
    }


def timings(f, args, calls, trials):
    jax.block_until_ready(f(*args))
    b2b, ret, syn = [], [], []
    for _ in range(trials):
        t = time.perf_counter()
        out = None
        for _ in range(calls):
            out = f(*args)
        jax.block_until_ready(out)
        b2b.append((time.perf_counter() - t) / calls * 1e6)
        for _ in range(calls):
            t = time.perf_counter()
            out = f(*args)
            t1 = time.perf_counter()
            jax.block_until_ready(out)
            ret.append((t1 - t) * 1e6)
            syn.append((time.perf_counter() - t) * 1e6)
    return statistics.median(b2b), statistics.median(ret), statistics.median(syn)


def host_summary(path, min_us):
    files = glob.glob(f"{path}/**/perfetto_trace.json.gz", recursive=True)
    with gzip.open(files[0], "rt") as fh:
        events = json.load(fh)
    events = events["traceEvents"] if isinstance(events, dict) else events
    names = {e["pid"]: str(e.get("args", {}).get("name")) for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    by = {}
    for e in events:
        if e.get("ph") == "X" and float(e.get("dur", 0)) >= min_us and "GPU" not in names.get(e["pid"], ""):
            t, c = by.get(e["name"], (0.0, 0))
            by[e["name"]] = (t + float(e["dur"]), c + 1)
    return sorted(by.items(), key=lambda kv: -kv[1][0])[:25]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--preset", default="cat-n15")
    ap.add_argument("--schemes", default="bfv,bgv")
    ap.add_argument("--ops", default="add,multiply,relinearize,rotate_one_step,rotate_columns")
    ap.add_argument("--variants", default="default,no_cmdbuf,min_graph_1")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--min-us", type=float, default=3.0)
    ap.add_argument("--encrypt", action="store_true", help="also profile encrypt (public key) with cProfile")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    report = {}
    for scheme in args.schemes.split(","):
        mod = {"bfv": bfv, "bgv": bgv}[scheme]
        t0 = time.perf_counter()
        p, ctx, evk, sk, pk, pt, x, d = setup(mod, args.preset)
        print(f"{scheme} {args.preset}: setup {time.perf_counter() - t0:.1f} s; leaves ctx "
              f"{len(jax.tree.leaves(ctx))}, evk {len(jax.tree.leaves(evk))}", flush=True)
        table = operations(mod, ctx, evk, x, d)
        compiled = {}
        for op in args.ops.split(","):
            fn, a = table[op]
            lowered = jax.jit(fn).lower(*a)
            for v in args.variants.split(","):
                try:
                    compiled[op, v] = lowered.compile(VARIANTS[v] or None)
                except Exception as e:  # an option this XLA does not know
                    print(f"{op} {v}: compile failed: {str(e)[:200]}")
        rows = {}
        for r in range(args.rounds):
            for (op, v), f in compiled.items():
                rows.setdefault((op, v), []).append(timings(f, table[op][1], args.calls, args.trials))
        for (op, v), f in compiled.items():
            k = trace_kernels(f, table[op][1], f"/tmp/lone_{scheme}_{op}_{v}")
            hs = host_summary(f"/tmp/lone_{scheme}_{op}_{v}", args.min_us)
            meas = rows[op, v]
            line = (f"{scheme} {op:16s} {v:12s} b2b " + " ".join(f"{m[0]:6.1f}" for m in meas)
                    + "  ret " + " ".join(f"{m[1]:6.1f}" for m in meas)
                    + "  sync " + " ".join(f"{m[2]:6.1f}" for m in meas)
                    + f"  | kernels {sum(c for _, c in k.values())} busy {k.busy:.1f} span {k.span:.1f} "
                      f"graphs {k.graph_launches}")
            print(line, flush=True)
            report[f"{scheme}/{op}/{v}"] = dict(b2b=[m[0] for m in meas], ret=[m[1] for m in meas],
                                                sync=[m[2] for m in meas], kernels=sum(c for _, c in k.values()),
                                                busy=k.busy, span=k.span, graphs=k.graph_launches,
                                                host=hs[:12])
            if v == "default":
                for name, (t, c) in hs[:12]:
                    print(f"      host {t:8.1f} us {c:4d}x {name[:100]}")
                for name, (t, c) in sorted(k.items(), key=lambda kv: -kv[1][0])[:8]:
                    print(f"      gpu  {t:8.1f} us {c:4d}x {name[:100]}")
        if args.encrypt:
            jax.block_until_ready(mod.encrypt(pt, ctx, pk))
            t = time.perf_counter()
            for _ in range(5):
                jax.block_until_ready(mod.encrypt(pt, ctx, pk))
            print(f"{scheme} encrypt (public key, os.urandom): {(time.perf_counter() - t) / 5 * 1e3:.2f} ms a call")
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(5):
                jax.block_until_ready(mod.encrypt(pt, ctx, pk))
            prof.disable()
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(25)
            print(s.getvalue()[:6000])
    with open(f"{args.out}/lone_op_probe.json", "w") as fh:
        json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
