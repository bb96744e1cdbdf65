"""Where a bootstrap's wall time goes beyond its GPU kernels (device machine): the n16-boot
bootstrap compiled under several XLA option sets (``--variants``), each timed for wall time
and for the time the call takes to return (host dispatch), and one run traced with the host's
events kept (XLA's thunk execution, command-buffer recording), written as gzipped JSON.

    python tools/boot_dispatch_probe.py --out $OUT [--slots 32768]
"""
from __future__ import annotations

import argparse
import gzip
import glob
import json
import os
import statistics
import sys
import time

import jax
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))

from jax_fhe import ckks, circuits  # noqa: E402
from jax_fhe.rns import HostRandom  # noqa: E402

VARIANTS = {
    "default": None,
    "no_cmdbuf": {"xla_gpu_enable_command_buffer": ""},
    "cmdbuf_all": {"xla_gpu_enable_command_buffer": "FUSION,CUSTOM_CALL,CUBLAS,CUBLASLT,DYNAMIC_SLICE_FUSION,"
                   "WHILE,CONDITIONAL"},
    "skip_temp": {"xla_gpu_command_buffer_update_mode": "SKIP_TEMP"},
    "skip_profiled": {"xla_gpu_command_buffer_update_mode": "SKIP_PROFILED"},
}


def timed(f, args, runs):
    out = f(*args)
    jax.block_until_ready(out)
    wall, ret = [], []
    for _ in range(runs):
        t = time.perf_counter()
        out = f(*args)
        t1 = time.perf_counter()
        jax.block_until_ready(out)
        t2 = time.perf_counter()
        ret.append((t1 - t) * 1e3)
        wall.append((t2 - t) * 1e3)
    return statistics.median(wall), statistics.median(ret), min(wall)


def host_events(f, args, path, min_us=20.0):
    with jax.profiler.trace(path, create_perfetto_trace=True):
        jax.block_until_ready(f(*args))
    files = glob.glob(f"{path}/**/perfetto_trace.json.gz", recursive=True)
    with gzip.open(files[0], "rt") as fh:
        events = json.load(fh)
    events = events["traceEvents"] if isinstance(events, dict) else events
    names = {e["pid"]: e.get("args", {}).get("name") for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    kept = [[names.get(e["pid"]), e.get("tid"), e["name"], float(e["ts"]), float(e.get("dur", 0))]
            for e in events if e.get("ph") == "X" and float(e.get("dur", 0)) >= min_us]
    return sorted(kept, key=lambda e: e[3])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--preset", default="n16-boot")
    ap.add_argument("--slots", type=int, default=None)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--variants", default="default,no_cmdbuf,cmdbuf_all")
    args = ap.parse_args()
    params = ckks.preset(args.preset)
    rng = HostRandom.insecure_deterministic(1)  # probe keys only
    ctx = ckks.make_context(params)
    keys = ckks.keygen(ctx, rng)
    boot = circuits.make_bootstrapper(ctx, circuits.BootstrapConfig(slots=args.slots))
    bk = circuits.gen_bootstrap_keys(ctx, keys.secret, boot, rng, progress=False)
    z = np.random.default_rng(0).uniform(-1, 1, boot.slots)
    ct = ckks.encrypt(ckks.encode(z, ctx, level=0), ctx, keys.public, HostRandom.insecure_deterministic(2))
    call = (ct, ctx, boot, bk)
    print("leaves:", {k: len(jax.tree_util.tree_leaves(v)) for k, v in zip(("ct", "ctx", "boot", "bk"), call)})
    report = {}
    lowered = jax.jit(circuits.bootstrap).lower(*call)
    for name in args.variants.split(","):
        t = time.perf_counter()
        try:
            compiled = lowered.compile(VARIANTS[name])
        except Exception as e:  # an option this XLA does not know
            print(f"{name}: compile failed: {e}")
            continue
        cs = time.perf_counter() - t
        med, ret, lo = timed(compiled, call, args.runs)
        err = float(np.log2(np.abs(ckks.decode(ckks.decrypt(compiled(*call), ctx, keys.secret), ctx) - z).max()))
        report[name] = dict(compile_s=cs, wall_ms=med, return_ms=ret, min_ms=lo, log2_err=err)
        print(f"{name}: wall {med:.2f} ms (min {lo:.2f}), call returns after {ret:.2f} ms, compile {cs:.1f} s, "
              f"error 2^{err:.2f}", flush=True)
        ev = host_events(compiled, call, f"/tmp/probe_trace_{name}")
        with gzip.open(f"{args.out}/host_events_{name}.json.gz", "wt") as fh:
            json.dump(ev, fh)
    with open(f"{args.out}/dispatch_probe.json", "w") as fh:
        json.dump(report, fh, indent=2)


if __name__ == "__main__":
    main()
