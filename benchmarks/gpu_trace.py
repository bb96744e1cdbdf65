"""GPU kernel time per kernel name of one call of a jitted function, from a jax.profiler trace
(its perfetto JSON: the complete events of the trace's GPU processes). Used by
``profile_pir.py --trace`` and ``bench_ckks.py --trace``; summarised where the trace is taken
(the device machine returns only a few files)."""
from __future__ import annotations

import glob
import gzip
import json

import jax


def trace_kernels(f, args, path):
    """{kernel name: (total us, count)} of one call of f, from a jax.profiler trace in ``path``:
    the complete events of the trace's GPU processes."""
    with jax.profiler.trace(path, create_perfetto_trace=True):
        jax.block_until_ready(f(*args))
    files = glob.glob(f"{path}/**/perfetto_trace.json.gz", recursive=True)
    if not files:
        return {}
    with gzip.open(files[0], "rt") as fh:
        events = json.load(fh)
    events = events["traceEvents"] if isinstance(events, dict) else events
    gpu_pids = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
                and any(k in str(e.get("args", {}).get("name", "")) for k in ("GPU", "gpu", "/device"))}
    totals = {}
    for e in events:
        if e.get("ph") == "X" and e.get("pid") in gpu_pids:
            t, c = totals.get(e["name"], (0.0, 0))
            totals[e["name"]] = (t + float(e.get("dur", 0)), c + 1)
    return totals


def print_kernel_summary(title, totals, top=18):
    total = sum(t for t, _ in totals.values())
    print(f"-- GPU kernels, {title}: {total / 1e3:.2f} ms in {sum(c for _, c in totals.values())} events")
    for name, (t, c) in sorted(totals.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"   {t:9.1f} us {c:6d}x  {name[:110]}")
