"""CKKS benchmarks at N = 2^16: HMult (relinearize + rescale), HRot, rescale, and hybrid key
switching at Theodosian's (L, alpha, beta) = (48, 12, 4), (24, 12, 2), (12, 12, 1), single and
batched (vmap), with the key switch compared to its memory-traffic floor.

Floor: Theodosian Table III's global-memory transactions per key switch (stage 1 + 2 + 3 =
352 + 233 + 201 MB at (48, 12, 4); 101 + 81.8 + 107 at (24, 12, 2); 31.5 + 34.6 + 69.2 at
(12, 12, 1)) over the device's measured copy bandwidth (jitted x + 1 over 1 GiB, read + write).
``ratio`` = measured time / floor (1.0 would be Theodosian's ideal traffic at copy speed).

The CKKS ops get ``ctx.for_levels([level])`` (one level's tables) rather than the whole
context: host dispatch cost grows with the number of argument arrays.

Timing: jitted function, warm-up call, then the median over trials of (elapsed for ``calls``
dispatches) / calls, each trial ended by block_until_ready. Batched rows report time per
ciphertext (one vmapped call over B ciphertexts / B).

    python benchmarks/bench_ckks.py [--out run.json] [--batch 8]         # GPU, N = 2^16
    python benchmarks/bench_ckks.py --results                            # and update the page
    python benchmarks/bench_ckks.py --quick                              # CPU check, N = 2^12

``--results`` merges the key-switch rows into benchmarks/results/keyswitch.json and the
HMult / HRot / rescale rows into benchmarks/results/ckks.json (wall time; per ciphertext of the
vmapped call as ``batched``), from which ``results_page.py`` renders benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from bench_kernels import copy_bandwidth
from gpu_trace import print_kernel_summary, trace_kernels
from jax_fhe import ckks, ops, rlwe, rns
from jax_fhe.rns import HostRandom
from results import default_path as default_results_path
from results import entry as result_entry
from results import git_commit
from results import merge as merge_results

THEODOSIAN_TABLE_III_MB = {(48, 12, 4): (352, 233, 201), (24, 12, 2): (101, 81.8, 107),
                           (12, 12, 1): (31.5, 34.6, 69.2)}


# Batched calls per trial: enough that the host dispatch of one call overlaps the device work
# of the one before (with 2 calls per trial, as before session 6, one dispatch in two was
# exposed: on an H200 at (48, 12, 4), batch 8, 306.7 us per ct against 261 us of GPU kernels).
BATCHED_CALLS = 8


def _time(fn, *args, calls: int, trials: int = 5) -> float:
    jax.block_until_ready(fn(*args))  # compile + warm up
    per = []
    for _ in range(trials):
        t0 = time.perf_counter()
        out = None
        for _ in range(calls):
            out = fn(*args)
        jax.block_until_ready(out)
        per.append((time.perf_counter() - t0) / calls)
    return statistics.median(per)


def bench_key_switch(n, big_l, alpha, batch, calls, put, trace=None):
    """Hybrid key switch of one polynomial at L limbs with alpha special primes. ``trace``: a
    folder; prints the GPU kernels of one single and one batched call."""
    qs = rns.ntt_primes(30, big_l, n)
    ps = rns.ntt_primes(31, alpha, n, exclude=qs)
    primes = qs + ps
    ring = put(rns.make_context(primes, n))
    rows, special = tuple(range(big_l)), tuple(range(big_l, big_l + alpha))
    tables = put(rlwe.make_hybrid_tables(primes, rows, special, alpha))
    r = HostRandom.insecure_deterministic(1)  # benchmark data only
    s = ops.ntt(jnp.asarray(rns.to_residues(r.ternary((2, n)), primes)), ring)
    key = put(rlwe.gen_switching_key(ring, s[0], s[1], num_q=big_l, alpha=alpha, sigma=3.2, rng=r))
    x = put(jnp.asarray(r.uniform_mod(qs, n)))
    f = jax.jit(rlwe.key_switch)
    single = _time(f, x, key, ring, tables, calls=calls)
    xb = put(jnp.asarray(np.moveaxis(r.uniform_mod(qs, (batch, n)), 0, 1)))
    fb = jax.jit(jax.vmap(rlwe.key_switch, in_axes=(0, None, None, None)))
    batched = _time(fb, xb, key, ring, tables, calls=max(BATCHED_CALLS, calls // batch)) / batch
    gpu = {}
    if trace:
        label = f"key switch ({big_l}, {alpha})"
        t1 = trace_kernels(f, (x, key, ring, tables), f"{trace}/ks{big_l}_1")
        tb = trace_kernels(fb, (xb, key, ring, tables), f"{trace}/ks{big_l}_b{batch}")
        print_kernel_summary(f"{label}, one ct", t1)
        print_kernel_summary(f"{label}, batch {batch}", tb)
        gpu = {"gpu_us": sum(t for t, _ in t1.values()),
               "gpu_us_per_ct_batched": sum(t for t, _ in tb.values()) / batch}
    return single, batched, -(-big_l // alpha), gpu


def bench_ops(params, level, batch, calls, put):
    ctx = put(ckks.make_context(params))
    keys = put(ckks.keygen(ctx, HostRandom.insecure_deterministic(2), rotations=(1,)))
    rng = np.random.default_rng(0)
    z = rng.uniform(-1, 1, (batch, params.slots))
    pt = ckks.encode(z, ctx, level=level)
    cts = put(ckks.encrypt(pt, ctx, keys.secret, HostRandom.insecure_deterministic(3)))
    one = ckks.Ciphertext(data=cts.data[0], level=cts.level, scale=cts.scale, slots=cts.slots,
                          params=cts.params)
    evk = keys.evaluation
    fns = {
        "HMult (relin + rescale)": lambda a, ctx, evk: ckks.mul(a, a, ctx, evk),
        "HRot (1 step)": lambda a, ctx, evk: ckks.rotate(a, 1, ctx, evk),
        "Rescale": lambda a, ctx, evk: ckks.rescale(a, ctx),
    }
    # only this level's tables: each array argument costs host time per call (the whole
    # n16-boot context is 768 arrays, 0.19 ms per call of pure dispatch on a 2-core CPU host;
    # one level's tables 39 arrays, 0.015 ms)
    lctx = ctx.for_levels([level])
    rows = []
    for name, fn in fns.items():
        t1 = _time(jax.jit(fn), one, lctx, evk, calls=calls)
        tb = _time(jax.jit(jax.vmap(fn, in_axes=(0, None, None))), cts, lctx, evk,
                   calls=max(BATCHED_CALLS, calls // batch)) / batch
        rows.append({"op": name, "level": level, "limbs": len(params.rows(level)),
                     "us": t1 * 1e6, "us_per_ct_batched": tb * 1e6, "batch": batch})
    return rows


def result_entries(ks_rows, op_rows, preset, n, device_kind, bw):
    """(key-switch entries, CKKS-op entries) in the results format (benchmarks/results.py)."""
    ks = []
    for r in ks_rows:
        shape = (r["L"], r["alpha"], r["beta"])
        extra = {}
        if "floor_us" in r:
            extra = dict(floor=dict(time=round(r["floor_us"], 1),
                                    basis=f"{sum(r['table_iii_mb']):g} MB (Theodosian Table III) at the "
                                          f"copy bandwidth ({bw / 1e9:.0f} GB/s, wall)"),
                         ratio=round(r["ratio"], 2))
        batched = dict(batch=r["batch"], time=round(r["us_per_ct_batched"], 1))
        if "ratio_batched" in r:
            batched["ratio"] = round(r["ratio_batched"], 2)
        ks.append(result_entry(f"keyswitch/N=2^{n.bit_length() - 1}/{shape}", "hybrid key switch",
                               f"N = 2^{n.bit_length() - 1}, (L, α, β) = {shape}", device_kind,
                               time=round(r["us"], 1), clock="wall", batched=batched, **extra))
    ops_ = [result_entry(f"{r['op']}/{preset}/level={r['level']}", r["op"],
                         f"{preset}, level {r['level']} ({r['limbs']} limbs)", device_kind,
                         time=round(r["us"], 1), clock="wall",
                         batched=dict(batch=r["batch"], time=round(r["us_per_ct_batched"], 1)))
            for r in op_rows]
    return ks, ops_


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default=None, help="gpu or cpu (default: JAX's default backend)")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    ap.add_argument("--batch", type=int, default=8, help="ciphertexts per vmapped call")
    ap.add_argument("--quick", action="store_true", help="small INSECURE N = 2^12 run (checks the script)")
    ap.add_argument("--trace", default=None, help="print the GPU kernels of each key switch "
                    "(one traced single and batched call; trace files under this folder)")
    ap.add_argument("--key-switch-only", action="store_true", help="skip the HMult/HRot/rescale rows")
    ap.add_argument("--ks-limbs", default=None, help="comma-separated L of the key-switch rows to run "
                    "(default: all of Theodosian's Table III)")
    ap.add_argument("--results", nargs="?", const="default", default=None, metavar="DIR",
                    help="merge the rows into the results files read by results_page.py: DIR/keyswitch.json "
                         "and DIR/ckks.json (default DIR: benchmarks/results)")
    args = ap.parse_args()
    if args.quick and args.results == "default":
        ap.error("--quick rows are toy parameters on the CPU: give --results a scratch folder")
    device = jax.devices(args.backend)[0] if args.backend else jax.devices()[0]
    put = lambda tree: jax.device_put(tree, device)  # noqa: E731
    if args.quick:
        n, configs, preset, calls, batch = 1 << 12, [(8, 4, 2), (4, 4, 1)], "toy-n12", 3, 2
        bw_bytes = 1 << 26
    else:
        n, configs, preset, calls, batch = 1 << 16, list(THEODOSIAN_TABLE_III_MB), "n16-boot", 20, args.batch
        bw_bytes = 1 << 30
    params = ckks.preset(preset)
    bw = copy_bandwidth(device, bw_bytes)
    print(f"device: {device.device_kind}; copy bandwidth {bw / 1e9:.0f} GB/s; N = {n}; {params!r}")

    if args.ks_limbs:
        configs = [c for c in configs if str(c[0]) in args.ks_limbs.split(",")]
    ks_rows = []
    for big_l, alpha, beta in configs:
        single, batched, b, gpu = bench_key_switch(n, big_l, alpha, batch, calls, put, args.trace)
        assert b == beta
        row = {"op": "key switch", "L": big_l, "alpha": alpha, "beta": beta, "us": single * 1e6,
               "us_per_ct_batched": batched * 1e6, "batch": batch, **gpu}
        mb = THEODOSIAN_TABLE_III_MB.get((big_l, alpha, beta))
        if mb and n == 1 << 16:
            floor = sum(mb) * 1e6 / bw
            row.update(floor_us=floor * 1e6, ratio=single / floor, ratio_batched=batched / floor,
                       table_iii_mb=mb)
        ks_rows.append(row)
    op_rows = []
    for level in ([] if args.key_switch_only else sorted({params.default_level, params.max_level})):
        op_rows += bench_ops(params, level, batch, calls, put)

    print(f"\n{'key switch (L, a, b)':22s} {'us':>10s} {'us/ct (B=%d)' % batch:>14s} {'floor us':>9s} "
          f"{'ratio':>7s} {'ratio B':>7s} {'GPU us':>8s} {'GPU us/ct':>9s}")
    for r in ks_rows:
        fl = (f"{r['floor_us']:9.1f} {r['ratio']:7.2f} {r['ratio_batched']:7.2f}" if "floor_us" in r
              else f"{'-':>9s} {'-':>7s} {'-':>7s}")
        g = (f"{r['gpu_us']:8.1f} {r['gpu_us_per_ct_batched']:9.1f}" if "gpu_us" in r else "")
        print(f"{str((r['L'], r['alpha'], r['beta'])):22s} {r['us']:10.1f} {r['us_per_ct_batched']:14.1f} {fl} {g}")
    print(f"\n{'op':26s} {'level':>5s} {'limbs':>5s} {'us':>10s} {'us/ct (B=%d)' % batch:>14s}")
    for r in op_rows:
        print(f"{r['op']:26s} {r['level']:5d} {r['limbs']:5d} {r['us']:10.1f} {r['us_per_ct_batched']:14.1f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": device.device_kind, "copy_bandwidth_gbs": bw / 1e9, "n": n,
                       "params": repr(params), "commit": git_commit(), "date": time.strftime("%Y-%m-%d"),
                       "key_switch": ks_rows, "ops": op_rows}, f, indent=2)
        print(f"wrote {args.out}")
    if args.results:
        ks, ops_ = result_entries(ks_rows, op_rows, preset, n, device.device_kind, bw)
        for area, entries in (("keyswitch", ks), ("ckks", ops_)):
            path = (default_results_path(area) if args.results == "default"
                    else pathlib.Path(args.results) / f"{area}.json")
            if entries:
                merge_results(path, area, entries)
                print(f"merged {len(entries)} rows into {path}; python benchmarks/results_page.py renders RESULTS.md")


if __name__ == "__main__":
    sys.exit(main())
