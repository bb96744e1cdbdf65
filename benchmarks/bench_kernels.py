"""Kernel benchmarks: NTT, INTT, the lifted forward NTT and BConv at N = 2^16 (``--log-n``), as
time and as a fraction of the device's measured copy bandwidth.

Bytes counted: each input read once and each output written once (NTT: 2 * B * L * N * 4;
lifted NTT, int32[B, N] -> uint32[B, L, N]: B * (1 + L) * N * 4; BConv: B * (Lin + Lout) * N * 4). The copy bandwidth is measured on the same device with a
jitted ``x + 1`` over 1 GiB (read + write counted): by wall time for the wall-time columns and,
with ``--trace``, by the profiler's device time for the device-time columns, so that each
fraction compares like with like (since session 29; before, both used the wall-time copy, which
puts the copy's dispatch and synchronization in its time: 0.3-1% below its device time).

Timing: one jitted executable applies the kernel to K distinct inputs (K * size >= 256 MB on
the GPU, so the inputs do not sit in L2 between uses, and K >= 8 so the dispatch of the
executable is amortized), and each trial runs that executable three times before it
synchronizes (each dispatch overlaps the device work of the run before); the per-kernel time is
the median over trials of elapsed / (3 K), after a warm-up. ``dispatch_us`` separately reports one jitted call on a tiny input (host overhead).

    python benchmarks/bench_kernels.py [--backend gpu|cpu] [--out run.json] [--quick]
    python benchmarks/bench_kernels.py --kernels ntt --limbs 48 --batches 16,64 --trace /tmp/tr --results

``--results`` merges the rows into benchmarks/results/kernels.json (time: the device time with
``--trace``, else the wall time; floor: the bytes above over the copy bandwidth measured the same
way), from which ``results_page.py`` renders benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from gpu_trace import trace_kernels
from jax_fhe import ops, rns
from results import add_argument as add_results_argument
from results import entry as result_entry
from results import git_commit
from results import merge as merge_results
from results import refuse_quick_default



def _time_calls(fn, inputs, calls: int, trials: int = 5) -> float:
    """Median wall time of one ``fn(x)`` dispatch, cycling over ``inputs``."""
    for x in inputs[:2]:
        jax.block_until_ready(fn(x))  # compile + warm up
    per_call = []
    for _ in range(trials):
        t0 = time.perf_counter()
        out = None
        for i in range(calls):
            out = fn(inputs[i % len(inputs)])
        jax.block_until_ready(out)
        per_call.append((time.perf_counter() - t0) / calls)
    return statistics.median(per_call)


def _time_in_one_executable(op, inputs, trials: int = 7, repeats: int = 3, trace: str | None = None):
    """(median wall time per kernel, device time per kernel or None) when one executable runs
    ``op`` on every input.

    Each trial dispatches the executable ``repeats`` times before it synchronizes, so the host
    dispatch of one run overlaps the device work of the one before: only the first dispatch and
    the final synchronization are exposed, amortized over repeats * len(inputs) kernels.
    With ``trace`` (a folder), one more run is traced: the device time is the time at least one
    of its GPU kernels ran (the union of their intervals: kernels that overlap, as the cluster
    NTT and its tail do, count once) over len(inputs), with no host time in it; the top kernels
    are printed.
    """
    f = jax.jit(lambda *xs: [op(x) for x in xs])
    jax.block_until_ready(f(*inputs))
    times = []
    for _ in range(trials):
        t0 = time.perf_counter()
        out = None
        for _ in range(repeats):
            out = f(*inputs)
        jax.block_until_ready(out)
        times.append((time.perf_counter() - t0) / (repeats * len(inputs)))
    device = None
    if trace:
        totals = trace_kernels(f, inputs, trace)
        for name, (t, c) in sorted(totals.items(), key=lambda kv: -kv[1][0])[:3]:
            print(f"    trace: {t / c:9.1f} us/launch device time, {c}x {name[:80]}", flush=True)
        if totals:
            device = totals.busy * 1e-6 / len(inputs)
    return statistics.median(times), device


def _measure(label, op, inputs, nbytes, bw, trace, **fields):
    """Time ``op`` (see _time_in_one_executable), print one line and return its result row.
    ``bw``: the copy bandwidth, (wall, device) (from copy_bandwidth / copy_bandwidth_device; the
    device-time fraction uses the second where there is one)."""
    bw_wall, bw_dev = bw
    t, dev = _time_in_one_executable(op, inputs, trace=trace)
    row = dict(**fields, time_us=t * 1e6, bytes=nbytes, gbps=nbytes / t / 1e9, frac_copy_bw=nbytes / t / bw_wall)
    line = f"{label}: {t * 1e6:9.1f} us  {nbytes / t / 1e9:7.1f} GB/s  {100 * nbytes / t / bw_wall:5.1f}% of copy"
    if dev:
        frac = nbytes / dev / (bw_dev or bw_wall)
        row.update(device_us=dev * 1e6, frac_copy_bw_device=frac)
        line += f"  (device {dev * 1e6:.1f} us, {100 * frac:.1f}%)"
    print(line, flush=True)
    return row


def _copy(device, nbytes: int):
    """The copy the fractions are read against: a jitted ``x + 1`` and its uint32 input of
    ``nbytes``."""
    x = jax.device_put(jnp.arange(nbytes // 4, dtype=jnp.uint32), device)
    return jax.jit(lambda v: v + jnp.uint32(1)), x


def copy_bandwidth(device, nbytes: int) -> float:
    """Bytes per second (read + write) of the copy over ``nbytes``, by wall time."""
    f, x = _copy(device, nbytes)
    t = _time_calls(f, [x], calls=10)
    return 2 * nbytes / t


def copy_bandwidth_device(device, nbytes: int, trace: str, runs: int = 5) -> float | None:
    """The same copy's bandwidth by device time: the median over ``runs`` traced calls of the
    time its kernels ran (None if the trace has no GPU kernels)."""
    f, x = _copy(device, nbytes)
    jax.block_until_ready(f(x))
    busy = [trace_kernels(f, [x], f"{trace}/copy_{i}").busy for i in range(runs)]
    busy = [b for b in busy if b > 0]
    return 2 * nbytes / (statistics.median(busy) * 1e-6) if busy else None


def _inputs(device, primes, batch, rng, budget_bytes, min_count, n, lift_bits=None):
    """K distinct inputs uint32[batch, L, n] of residues (or, with ``lift_bits``, int32[batch, n]
    of values in [-2^lift_bits, 2^lift_bits))."""
    shape = (batch, n) if lift_bits else (batch, len(primes), n)
    one = int(np.prod(shape)) * 4
    k = int(max(min_count, min(64, -(-budget_bytes // max(one, 1)))))
    if lift_bits:
        base = rng.integers(-(1 << lift_bits), 1 << lift_bits, shape, dtype=np.int64).astype(np.int32)
    else:
        q = np.array(primes, dtype=np.uint64)[:, None]
        base = (rng.integers(0, 2**63, shape, dtype=np.uint64) % q).astype(np.uint32)
    put = lambda a: jax.device_put(jnp.asarray(a), device)  # noqa: E731
    # distinct inputs: one random base, each copy with its own random shift of the coefficients
    return [put(np.roll(base, int(rng.integers(0, n)), axis=-1)) for _ in range(k)]


_OPERATIONS = {"ntt": "NTT forward", "intt": "NTT inverse", "lift": "NTT forward of int32 digits (ntt_lift)",
               "modup": "NTT forward of ModUp's limbs", "bconv": "BConv",
               "sample": "device sampler, Gaussian (ops.sample_small)"}


def result_entries(rows, device_kind: str, bw) -> list:
    """The rows in the results format (benchmarks/results.py): time by device where traced,
    floor = bytes over the copy bandwidth measured the same way, ratio = time / floor."""
    bw_wall, bw_dev = bw
    out = []
    for r in rows:
        traced = "device_us" in r
        t = r["device_us"] if traced else r["time_us"]
        rate = (bw_dev or bw_wall) if traced else bw_wall
        floor_us = r["bytes"] / rate * 1e6
        kind = r["kernel"].rstrip("0123456789")
        width = r["kernel"][len(kind):]
        size = f"N = 2^{r['n'].bit_length() - 1}"
        primes = f", {width}-bit primes" if width else ""
        if kind == "bconv":
            key = f"{r['kernel']}/N=2^{r['n'].bit_length() - 1}/{r['L']}->{r['L_out']}/B={r['batch']}"
            params = f"{size}, {r['L']} → {r['L_out']} limbs, batch {r['batch']}{primes}"
        else:
            key = f"{r['kernel']}/N=2^{r['n'].bit_length() - 1}/L={r['L']}/B={r['batch']}"
            params = f"{size}, L = {r['L']}, batch {r['batch']}{primes}"
        out.append(result_entry(key, _OPERATIONS[kind], params, device_kind, time=round(t, 1),
                                clock="device" if traced else "wall", ratio=round(t / floor_us, 2),
                                floor=dict(time=round(floor_us, 1), bytes=r["bytes"],
                                           bandwidth_gbps=round(rate / 1e9))))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default=None, help="gpu or cpu (default: JAX's default backend)")
    ap.add_argument("--out", default=None, help="write results as JSON here")
    ap.add_argument("--quick", action="store_true", help="fewer configurations (CPU smoke run)")
    ap.add_argument("--kernels", default="ntt,bconv", help="comma-separated subset of ntt,modup,lift,bconv,sample "
                    "(lift: ops.ntt_lift of int32 digits in [-2^17, 2^17), PIR's gadget digits; sample: "
                    "ops.sample_small's Gaussian, B x L x N values)")
    ap.add_argument("--log-n", type=int, default=16, help="ring degree N = 2^log_n (default 16)")
    ap.add_argument("--width", default="30", choices=["30", "31"], help="NTT prime width in bits")
    ap.add_argument("--limbs", default=None, help="comma-separated NTT limb counts (default 1,12,24,48)")
    ap.add_argument("--batches", default=None, help="comma-separated batch sizes (default 1,4,16 on GPU)")
    ap.add_argument("--trace", default=None, metavar="DIR",
                    help="also print each kernel's device time from a profiler trace written here")
    ap.add_argument("--bconv-out", default=None, help="comma-separated BConv output limb counts (default 12,24,48)")
    add_results_argument(ap, "kernels")
    args = ap.parse_args()
    refuse_quick_default(ap, args.results, args.quick, "kernels")

    device = jax.devices(args.backend)[0] if args.backend else jax.devices()[0]
    is_gpu = device.platform == "gpu"
    rng = np.random.default_rng(1)
    copy_bytes = (1 << 30) if is_gpu else (1 << 28)
    bw_wall = copy_bandwidth(device, copy_bytes)
    bw_dev = copy_bandwidth_device(device, copy_bytes, args.trace) if args.trace and is_gpu else None
    bw = (bw_wall, bw_dev)
    rot_budget = (256 << 20) if is_gpu else (1 << 20)
    min_count = 8 if is_gpu else 1

    limbs = [1, 12, 24, 48]
    batches = [1, 4, 16] if is_gpu and not args.quick else [1, 2]
    if args.quick:
        limbs = [1, 12]
    ints = lambda text: [int(v) for v in text.split(",")]  # noqa: E731
    limbs = ints(args.limbs) if args.limbs else limbs
    batches = ints(args.batches) if args.batches else batches
    # 30-bit primes (< 2^30: the kernels' lazy mode) as CKKS ciphertext primes, and 31-bit
    # primes (the canonical mode) as key-switching primes
    width = int(args.width)
    N = 1 << args.log_n
    primes = rns.ntt_primes(width, max(limbs), N)
    ctx = jax.device_put(rns.make_context(primes, N), device)
    small = [jax.device_put(jnp.zeros((1, N), jnp.uint32), device)]
    dispatch = _time_calls(jax.jit(lambda x: ops.ntt(x, ctx)), small, calls=50)
    print(f"dispatch: one jitted ntt call at L=1, B=1 takes {dispatch * 1e6:.1f} us wall", flush=True)

    rows = []
    print(f"device: {device.device_kind} ({device.platform}); copy bandwidth {bw_wall / 1e9:.1f} GB/s "
          "(read + write)" + (f"; by device time {bw_dev / 1e9:.1f} GB/s" if bw_dev else ""), flush=True)
    for L in (limbs if "ntt" in args.kernels else []):
        for B in batches:
            inputs = _inputs(device, primes[:L], B, rng, rot_budget, min_count, N)
            nbytes = 2 * B * L * N * 4
            for name, f in (("ntt", ops.ntt), ("intt", ops.intt)):
                rows.append(_measure(f"{name}{width} N=2^{args.log_n} L={L:2d} B={B:2d}",
                                     lambda x, f=f: f(x, ctx), inputs, nbytes, bw,
                                     args.trace and f"{args.trace}/{name}_{L}_{B}",
                                     kernel=f"{name}{width}", L=L, batch=B, n=N))
    # ModUp's forward NTT: every digit's conversion to the other rows of the extended basis
    # (L 30-bit rows in digits of 12, then 12 31-bit special rows), one array of beta (L + 12 - 12)
    # limbs in which each prime recurs beta - 1 or beta times
    for L in (limbs if "modup" in args.kernels else []):
        if L % 12 or L < 24:
            continue
        mp = rns.ntt_primes(30, L, N) + rns.ntt_primes(31, 12, N)
        mctx = jax.device_put(rns.make_context(mp, N), device)
        digits = [set(range(d, d + 12)) for d in range(0, L, 12)]
        mrows = tuple(r for dg in digits for r in range(L + 12) if r not in dg)
        for B in batches:
            inputs = _inputs(device, [mp[r] for r in mrows], B, rng, rot_budget, min_count, N)
            rows.append(_measure(f"modup-ntt N=2^{args.log_n} L={L:2d} ({len(mrows)} limbs) B={B:2d}",
                                 lambda x: ops.ntt(x, mctx, mrows), inputs, 2 * B * len(mrows) * N * 4, bw,
                                 args.trace and f"{args.trace}/modup_{L}_{B}",
                                 kernel="modup", L=len(mrows), batch=B, n=N))
    for L in (limbs if "lift" in args.kernels and width == 30 else []):
        for B in batches:
            inputs = _inputs(device, primes[:L], B, rng, rot_budget, min_count, N, lift_bits=17)
            rows.append(_measure(f"lift{width} N=2^{args.log_n} L={L:2d} B={B:2d}",
                                 lambda x, L=L: ops.ntt_lift(x, ctx, limbs=L), inputs,
                                 B * (1 + L) * N * 4, bw, args.trace and f"{args.trace}/lift_{L}_{B}",
                                 kernel=f"lift{width}", L=L, batch=B, n=N))

    # the device sampler: int32 Gaussian values from ChaCha20 (8 keystream bytes a value; compute
    # bound: its "floor" is only the output written once)
    gauss = rns.gaussian_table(3.2, 6.0)
    for L in (limbs if "sample" in args.kernels else []):
        for B in batches:
            keys = [jax.device_put(jnp.asarray(rns.HostRandom().device_key()), device) for _ in range(min_count)]
            rows.append(_measure(f"sample N=2^{args.log_n} L={L:2d} B={B:2d}",
                                 lambda k, L=L, B=B: ops.sample_small(k, (B, L, N), gauss), keys, B * L * N * 4, bw,
                                 args.trace and f"{args.trace}/sample_{L}_{B}", kernel="sample", L=L, batch=B, n=N))

    bconv_cases = [(12, 12), (12, 24), (12, 48)] if not args.quick else [(12, 12)]
    if args.bconv_out:
        bconv_cases = [(12, lout) for lout in ints(args.bconv_out)]
    for width in ((30, 31) if "bconv" in args.kernels else ()):
        for lin, lout in bconv_cases:
            src = rns.ntt_primes(width, lin, N)
            dst = rns.ntt_primes(width, lout, N, exclude=src)
            table = jax.device_put(rns.make_bconv_table(src, dst), device)
            for B in batches:
                inputs = _inputs(device, src, B, rng, rot_budget, min_count, N)
                tag = "overflow-free" if table.overflow_free else f"fold/{table.fold_every}"
                rows.append(_measure(f"bconv {width}-bit {lin}->{lout} B={B:2d} ({tag})",
                                     lambda x: ops.bconv(x, table), inputs, B * (lin + lout) * N * 4, bw,
                                     args.trace and f"{args.trace}/bconv{width}_{lout}_{B}",
                                     kernel=f"bconv{width}", L=lin, L_out=lout, batch=B, n=N, table=tag))

    result = dict(device=device.device_kind, platform=device.platform, jax=jax.__version__,
                  date=time.strftime("%Y-%m-%d"), commit=git_commit(), copy_bw_gbps=bw_wall / 1e9,
                  copy_bw_device_gbps=bw_dev / 1e9 if bw_dev else None,
                  dispatch_us=dispatch * 1e6, rows=rows)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)
    if args.results:
        merge_results(args.results, "kernels", result_entries(rows, device.device_kind, bw))
        print(f"merged {len(rows)} rows into {args.results}; python benchmarks/results_page.py renders RESULTS.md")
    print(f"\n{'kernel':8s} {'N':>6s} {'L':>3s} {'Lout':>4s} {'B':>5s} {'us':>9s} {'GB/s':>7s} {'%copy':>6s}"
          f" {'dev us':>9s} {'%copy':>6s}")
    for r in rows:
        dev = (f" {r['device_us']:9.1f} {100 * r['frac_copy_bw_device']:6.1f}" if "device_us" in r else "")
        print(f"{r['kernel']:8s} {r['n']:6d} {r['L']:3d} {r.get('L_out', r['L']):4d} {r['batch']:5d} "
              f"{r['time_us']:9.1f} {r['gbps']:7.1f} {100 * r['frac_copy_bw']:6.1f}{dev}")


if __name__ == "__main__":
    sys.exit(main())
