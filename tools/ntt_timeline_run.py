"""Where a cluster-NTT launch spends its time, from globaltimer marks printed by an instrumented
build (never main's): apply scripts/ntt_timeline.patch, build (scripts/build_device_kernels.sh),
revert, and on the device

    OUT=$OUT bash scripts/gpu_prebuilt.sh python3 scripts/ntt_timeline_run.py ntt intt

It runs K = 8 transforms at L = 48, batch 16 in one executable, three times, and prints for the
last launches: the clusters' prologue (loads landed, cluster barrier), item 0's end, the time per
item and the slow items, the loop's end, and the tail blocks' end of work (before they wait for
the clusters); then, for clusters 0-2, the phases of items 8, 9, 15-17 and 31-33 (the limb
changes at batch 16 come at items 16 and 32). Times in us from the launch's first cluster start;
the marks and printf make each item about 5% slower. Session 27 (benchmarks/RESULTS.md).
"""
import os
import re
import statistics
import subprocess
import sys

if len(sys.argv) > 1 and sys.argv[1] == "child":
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax_fhe import ops, rns
    op = sys.argv[2]
    N = 1 << 16
    primes = rns.ntt_primes(30, 48, N)
    ctx = rns.make_context(primes, N)
    rng = np.random.default_rng(0)
    q = np.array(primes, dtype=np.uint64)[:, None]
    xs = [jnp.asarray((rng.integers(0, 2**62, (16, 48, N), dtype=np.uint64) % q).astype(np.uint32)) for _ in range(8)]
    fn = ops.ntt if op == "ntt" else ops.intt
    f = jax.jit(lambda *a: [fn(x, ctx) for x in a])
    for _ in range(3):
        jax.block_until_ready(f(*xs))
    print("RUN DONE", flush=True)
    sys.exit(0)

for op in sys.argv[1:] or ["ntt", "intt"]:
    out = subprocess.run([sys.executable, __file__, "child", op], capture_output=True, text=True,
                         env=dict(os.environ)).stdout.split("\n")
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], f"timeline_raw_{op}.txt"), "w") as fh:
            fh.write("\n".join(out))
    clus, its, tail = [], {}, []
    for line in out:
        f = line.split()
        if not f:
            continue
        if f[0] == "TLC":
            clus.append([int(v) for v in f[1:]])
        elif f[0] == "TLI":
            its.setdefault((int(f[2]), int(f[3])), []).append([int(v) for v in f[4:]])
        elif f[0] == "TLT":
            tail.append([int(v) for v in f[1:]])
    print(f"== {op}: {len(clus)} cluster lines, {len(tail)} tail lines")
    if not clus:
        print("\n".join(out[-20:]))
        continue
    # launches: the clusters' start times fall into groups (each launch has 15 clusters)
    clus.sort(key=lambda c: c[3])
    launches, cur = [], [clus[0]]
    for c in clus[1:]:
        if c[3] - cur[0][3] > 50_000:  # 50 us apart: the next launch
            launches.append(cur)
            cur = [c]
        else:
            cur.append(c)
    launches.append(cur)
    for li, L in enumerate(launches[-4:]):
        t0 = min(c[3] for c in L)
        us = lambda t: (t - t0) / 1000  # noqa: E731
        starts = [us(c[3]) for c in L]
        pro = [us(c[4]) for c in L]
        syn = [us(c[5]) for c in L]
        loop_end = [us(c[6]) for c in L]
        ends = [us(c[7]) for c in L]
        per_item, first_item = [], []
        for c in L:
            n = c[2]
            marks = []
            for k in range(0, n, 8):
                rows = its.get((c[1], k), [])
                # the row recorded in this launch: the one within the launch's time range
                row = min(rows, key=lambda r: abs(r[0] - c[3])) if rows else []
                marks += row[: min(8, n - k)]
            if len(marks) == n and n > 2:
                first_item.append(us(marks[0]))
                per_item.append((marks[-1] - marks[1]) / (n - 2) / 1000)
        if li == len(launches[-4:]) - 1:
            for c in sorted(L, key=lambda c: c[1]):
                rows = [min(its.get((c[1], k), [[0] * 8]), key=lambda r: abs(r[0] - c[3])) for k in range(0, c[2], 8)]
                marks = [m for r in rows for m in r][: c[2]]
                gaps = [(b - a) / 1000 for a, b in zip(marks, marks[1:])]
                big = [(i + 1, round(g, 1)) for i, g in enumerate(gaps) if g > 5.5]
                print(f"   cluster {c[1]:2d}: n {c[2]} start {us(c[3]):.1f} pro {us(c[4]):.1f} sync {us(c[5]):.1f} "
                      f"item0 {us(marks[0]) if marks else -1:.1f} loop end {us(c[6]):.1f} exit {us(c[7]):.1f}; slow items {big[:8]}")
        T = [t for t in tail if t[0] == (1 if op == "intt" else 0) and 0 <= t[3] - t0 < 50_000]
        print(f"launch -{len(launches[-4:]) - li}: clusters start {min(starts):.1f}..{max(starts):.1f}, "
              f"prologue wait done {statistics.median(pro):.1f} (max {max(pro):.1f}), cluster sync {statistics.median(syn):.1f}, "
              f"item 0 done {statistics.median(first_item) if first_item else -1:.1f}, per item {statistics.median(per_item) if per_item else -1:.2f} "
              f"({min(per_item) if per_item else -1:.2f}..{max(per_item) if per_item else -1:.2f}), "
              f"loop end {min(loop_end):.1f}..{max(loop_end):.1f}, exit {min(ends):.1f}..{max(ends):.1f}")
        if T:
            ts = sorted(us(t[3]) for t in T)
            te = sorted(us(t[4]) for t in T)
            print(f"   tail: {len(T)} blocks, start {ts[0]:.1f}..{ts[-1]:.1f}, work done {te[0]:.1f} / {statistics.median(te):.1f} / {te[-1]:.1f}, "
                  f"tiles {sorted(t[2] for t in T)[0]}..{sorted(t[2] for t in T)[-1]}")

# phases of iterations (TLP lines, clusters 0..2, the last launch): durations in us
for op in sys.argv[1:] or ["ntt"]:
    raw = os.path.join(os.environ.get("OUT", "."), f"timeline_raw_{op}.txt")
    if not os.path.exists(raw):
        continue
    rows = [[int(v) for v in l.split()[1:]] for l in open(raw) if l.startswith("TLP")]
    if not rows:
        continue
    byc = {}
    for r in rows:
        byc.setdefault(r[1], []).append(r)
    names = ["P1 wait", "round1", "P2 mbar", "P3 row wait", "round3", "P4..round2"]
    for cid, rs in sorted(byc.items()):
        last = {}
        for r in rs:  # the latest launch's row per item
            if r[2] not in last or r[3] > last[r[2]][3]:
                last[r[2]] = r
        print(f"cluster {cid} (us): item | " + " | ".join(names) + " | total T0->T7")
        for k in (8, 9, 15, 16, 17, 31, 32, 33):
            if k in last:
                t = last[k][3:]
                d = [(t[1] - t[0]), (t[2] - t[1]), (t[3] - t[2]), (t[4] - t[3]), (t[5] - t[4]) if t[5] else 0,
                     (t[7] - t[6])]
                print(f"  {k:2d} | " + " | ".join(f"{x / 1000:5.2f}" for x in d) + f" | {(t[7] - t[0]) / 1000:5.2f}")
