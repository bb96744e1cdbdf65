"""HELR benchmark: encrypted logistic-regression training on MNIST 3 vs 8 (jax_fhe.apps.helr,
Han et al. 2019): milliseconds per iteration over the whole training (bootstraps included), the
bootstrap share, each kind of call apart (the bootstrap, the iteration at each level), the first
run's time (compilation), memory, and the model: test accuracy and AUC on the 200 held-out
digits beside the plaintext run, and the decrypted weights' error against it.

    python benchmarks/bench_helr.py                  # n16-boot, 14x14 (F = 256), batch 1024, 32 iterations (GPU)
    python benchmarks/bench_helr.py --quick          # INSECURE toy-boot-n12, 7x7, batch 256, 4 iterations (checks the script)

Timing: --runs warm trainings (one call chain each, waiting only at the end), ms per iteration =
run time / iterations; then one run that waits after every call, for the split (the bootstrap
share = the bootstraps' time over that run's time). Prints a table; ``--out FILE`` writes
JSON; ``--results`` merges the row into benchmarks/results/apps.json (the results page).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import jax
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))

import helr_mnist  # noqa: E402  (the example's data preparation and setup)
import results  # noqa: E402
from jax_fhe.apps import helr  # noqa: E402
from jax_fhe.rns import HostRandom  # noqa: E402


def _gib(tree) -> float:
    return sum(int(x.size) * x.dtype.itemsize for x in jax.tree_util.tree_leaves(tree) if hasattr(x, "dtype")) / 2**30


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="n16-boot")
    ap.add_argument("--pool", type=int, default=2, help="image downsampling (2: 14x14, 196 features)")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--iterations", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3, help="warm trainings timed")
    ap.add_argument("--quick", action="store_true", help="INSECURE toy-boot-n12, 7x7, batch 256, 4 iterations")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    results.add_argument(ap, "apps")
    args = ap.parse_args()
    if args.quick:
        args.preset, args.pool, args.batch, args.iterations, args.runs = "toy-boot-n12", 4, 256, 4, 1
    results.refuse_quick_default(ap, args.results, args.quick, "apps")
    dev = jax.devices()[0]

    config, batches, rows, y_te = helr_mnist.prepare(args.pool, args.batch, args.iterations, 1.0, 0)
    w_plain = helr.train_plain(batches, config)
    rng = HostRandom.insecure_deterministic(1)  # benchmark keys only
    t0 = time.perf_counter()
    ctx, keys, boot, plan, hk = helr_mnist.setup(args.preset, config, args.batch, rng, progress=True)
    jax.block_until_ready(hk)
    t1 = time.perf_counter()
    inputs = helr.encrypt_inputs(ctx, keys.public, batches, plan, rng)
    u0 = helr.encrypt_zero_weights(ctx, keys.public, plan, rng)
    jax.block_until_ready(inputs)
    t2 = time.perf_counter()
    print(f"{ctx.params!r}\n{boot!r}\ndevice {dev.device_kind}; F = {config.features}, batch {args.batch} "
          f"({plan.ciphertexts} ciphertexts), {config.iterations} iterations, {plan.bootstraps} bootstraps, "
          f"levels {sorted(set(plan.levels), reverse=True)}")
    mem = {"keys_gib": _gib(hk), "inputs_gib": _gib(inputs), "plans_gib": _gib(boot)}
    print(f"setup (context, plans, keys) {t1 - t0:.1f} s, client encryption {t2 - t1:.1f} s; memory: "
          + ", ".join(f"{k[:-4]} {v:.2f} GiB" for k, v in mem.items()))

    def run(**kw):
        start = time.perf_counter()
        u = jax.block_until_ready(helr.train(u0, inputs, plan, ctx, hk, boot, **kw))
        return u, time.perf_counter() - start

    _, first = run()
    print(f"first run (compiles the refresh and {len(set(plan.levels))} iteration variants): {first:.1f} s")
    totals = []
    for _ in range(args.runs):
        u, sec = run()
        totals.append(sec)
    per_iter = [1e3 * s / config.iterations for s in totals]
    times = []
    _, split_total = run(times=times)
    by_kind = {}
    for kind, _, level, sec in times:
        by_kind.setdefault((kind, level), []).append(1e3 * sec)
    boot_ms = sum(1e3 * s for k, *_, s in times if k == "refresh")
    share = boot_ms / (1e3 * split_total)

    w_enc = helr.decrypt_weights(u, ctx, keys.secret, plan)
    err = float(np.abs(w_enc - w_plain).max() / np.abs(w_plain).max())
    acc = {name: (helr.accuracy(w, rows, y_te), helr.auc(rows @ w, y_te)) for name, w in
           (("plain", w_plain), ("encrypted", w_enc))}

    print(f"\n{'':34} {'ms':>9}")
    print(f"{'per iteration (warm runs, median)':34} {statistics.median(per_iter):9.2f}   runs: "
          + ", ".join(f"{x:.2f}" for x in per_iter))
    for (kind, level), ms in sorted(by_kind.items(), key=lambda kv: (kv[0][0] != "refresh", -kv[0][1])):
        name = "bootstrap (refresh)" if kind == "refresh" else f"iteration from level {level}"
        print(f"{name:34} {statistics.median(ms):9.2f}   x{len(ms)}")
    print(f"bootstrap share: {100 * share:.1f}% of the synchronized run ({1e3 * split_total / config.iterations:.2f} "
          f"ms per iteration with a wait after every call)")
    for name, (a, area) in acc.items():
        print(f"{name:>10}: test accuracy {100 * a:.1f}%, AUC {area:.4f}")
    print(f"weights: max |w_enc - w_plain| / max |w_plain| = 2^{np.log2(err):.2f}")
    ok = helr_mnist.checks(err, acc["encrypted"][0], acc["plain"][0], config.iterations)
    print("OK" if ok else "MISMATCH")

    record = {
        "preset": args.preset, "device": dev.device_kind, "features": config.features, "batch": args.batch,
        "iterations": config.iterations, "bootstraps": plan.bootstraps, "ms_per_iteration": per_iter,
        "first_run_s": first, "split_total_s": split_total, "bootstrap_share": share,
        "calls_ms": {f"{k}@{lvl}": statistics.median(v) for (k, lvl), v in by_kind.items()},
        "accuracy": {k: v[0] for k, v in acc.items()}, "auc": {k: v[1] for k, v in acc.items()},
        "log2_weight_error": float(np.log2(err)), "setup_s": t1 - t0, "encrypt_s": t2 - t1, **mem,
    }
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(record, fh, indent=1)
    if args.results:
        split = ", ".join(f"{'bootstrap' if k == 'refresh' else f'iteration from {lvl}'} "
                          f"{statistics.median(v):.2f} ms" for (k, lvl), v in sorted(by_kind.items()))
        note = (f"median of {args.runs} trainings of {config.iterations} iterations ({plan.bootstraps} bootstraps, "
                f"sparse {config.features}-slot), {min(per_iter):.2f}-{max(per_iter):.2f}; calls apart: {split}; "
                f"bootstrap share {100 * share:.1f}%; test accuracy {100 * acc['encrypted'][0]:.1f}% "
                f"(plaintext {100 * acc['plain'][0]:.1f}%), AUC {acc['encrypted'][1]:.4f} "
                f"({acc['plain'][1]:.4f}); weights within 2^{np.log2(err):.1f} of the plaintext run; "
                f"first run {first:.0f} s; keys {mem['keys_gib']:.1f} GiB, encrypted batches {mem['inputs_gib']:.1f} GiB")
        e = results.entry(
            f"helr/{args.preset}/F={config.features}/batch={args.batch}/T={config.iterations}",
            "HELR training iteration (MNIST 3 vs 8)",
            f"{args.preset}, {28 // args.pool}x{28 // args.pool} images, {config.features} features, "
            f"batch {args.batch}, {config.iterations} iterations, bootstraps included",
            dev.device_kind, unit="ms", time=results.rounded([min(per_iter), max(per_iter)], 2),
            clock="wall", notes=note)
        if args.preset == "n16-boot" and config.features == 256 and args.batch == 1024 and config.iterations == 32:
            e["peer"] = {"figure": "Theodosian 21.3 ms/it (H100 SXM), 26.5 ms/it (H100 PCIe); Cheddar 40.7 ms/it "
                                   "(H100 PCIe)", "source": "Theodosian paper, Table II (HELR)"}
            e["goal"] = "<= 30 ms per iteration; weights within 2^-10 of the plaintext run; accuracy >= 92%"
        results.merge(args.results, "apps", [e])
        print(f"merged into {args.results}")


if __name__ == "__main__":
    main()
