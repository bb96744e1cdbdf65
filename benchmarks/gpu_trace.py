"""GPU kernel time per kernel name of one call of a jitted function, from a jax.profiler trace
(its perfetto JSON: the complete events of the trace's GPU processes). Used by
``profile_pir.py --trace`` and ``bench_ckks.py --trace``; summarised where the trace is taken
(the device machine returns only a few files)."""
from __future__ import annotations

import glob
import gzip
import json

import jax


class KernelTotals(dict):
    """{kernel name: (total us, count)}, plus ``span`` (first kernel start to last kernel end,
    us) and ``busy`` (the union of the kernels' intervals, us): busy below the sum of the
    totals means kernels ran concurrently."""
    span = 0.0
    busy = 0.0
    events = ()  # (name, start us, duration us) of every kernel, in start order
    graph_launches = 0  # host calls of cuGraphLaunch (XLA's command buffers run as CUDA graphs)


def save_events(totals, path):
    """Write the trace's kernel events as gzipped JSON [[name, start us, duration us], ...]
    (small enough to come back from the device machine, unlike the whole trace)."""
    with gzip.open(path, "wt") as fh:
        json.dump([list(e) for e in totals.events], fh)


def _union_length(intervals):
    busy, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop > end:
            busy += stop - max(start, end)
            end = stop
    return busy


def trace_kernels(f, args, path):
    """KernelTotals of one call of f, from a jax.profiler trace in ``path``: the complete events
    of the trace's GPU processes."""
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
    totals, intervals, names = KernelTotals(), [], []
    totals.graph_launches = sum(1 for e in events if e.get("ph") == "X" and e.get("pid") not in gpu_pids
                                and str(e.get("name", "")).startswith("cuGraphLaunch"))
    for e in events:
        if e.get("ph") == "X" and e.get("pid") in gpu_pids:
            t, c = totals.get(e["name"], (0.0, 0))
            dur = float(e.get("dur", 0))
            totals[e["name"]] = (t + dur, c + 1)
            intervals.append((float(e["ts"]), float(e["ts"]) + dur))
            names.append(e["name"])
    totals.events = tuple(sorted(((n, a, b - a) for n, (a, b) in zip(names, intervals)), key=lambda e: e[1]))
    if intervals:
        totals.span = max(b for _, b in intervals) - min(a for a, _ in intervals)
        totals.busy = _union_length(intervals)
    return totals


def print_kernel_summary(title, totals, top=18):
    total = sum(t for t, _ in totals.values())
    print(f"-- GPU kernels, {title}: {total / 1e3:.2f} ms in {sum(c for _, c in totals.values())} events"
          + (f"; span {totals.span:.1f} us, busy {totals.busy:.1f} us" if getattr(totals, "span", 0) else "")
          + f"; CUDA graph launches {getattr(totals, 'graph_launches', 0)}")
    for name, (t, c) in sorted(totals.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"   {t:9.1f} us {c:6d}x  {name[:110]}")
