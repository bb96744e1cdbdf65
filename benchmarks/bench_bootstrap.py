"""CKKS bootstrapping benchmark: latency (median of --runs after warm-up), the stage split
(raise: scale-up, the two secret switches, ModRaise, trace; CtS; EvalMod; StC), first-call
compile time, key and plan memory, precision (log2 of the max error over --precision-runs
bootstraps of uniform re/im in [-1, 1]), and whether XLA captured the program in command
buffers (CUDA graphs).

    python benchmarks/bench_bootstrap.py                      # n16-boot, full slots (GPU)
    python benchmarks/bench_bootstrap.py --slots 16384 --runs 10
    python benchmarks/bench_bootstrap.py --chain 100          # + 100 bootstraps fed back: drift, memory
    python benchmarks/bench_bootstrap.py --quick              # INSECURE toy-boot-n12 (checks the script)

Prints a table; ``--out FILE`` writes JSON; ``--results`` merges the rows into
benchmarks/results/bootstrap.json (the results page).
"""
from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import statistics
import sys
import time

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from jax_fhe import ckks, circuits  # noqa: E402
from jax_fhe.rns import HostRandom, HostTable  # noqa: E402
import results  # noqa: E402
from results import entry as result_entry  # noqa: E402


def _nbytes(tree) -> int:
    """Bytes of the tree's arrays: its leaves and the host tables in its static fields."""
    seen, total = set(), 0

    def walk(x):
        nonlocal total
        if id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, (HostTable, jax.Array)):
            total += int(x.nbytes)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            for f in dataclasses.fields(x):
                walk(getattr(x, f.name))
        elif isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y)
    walk(tree)
    return total


def _median_ms(fn, args, runs: int) -> tuple:
    out = fn(*args)
    jax.block_until_ready(out)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        out = fn(*args)
        jax.block_until_ready(out)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), min(times), max(times)


def _bytes_in_use():
    stats = jax.devices()[0].memory_stats() or {}
    return stats.get("bytes_in_use")


def _changes(mem: list) -> str:
    """Where a list of byte counts changed, as 'round (+delta)' items (rounds counted from 1)."""
    steps = [f"{i + 1} ({b - a:+,})" for i, (a, b) in enumerate(zip(mem, mem[1:]), start=1) if b != a]
    return ", ".join(steps[:12]) + (f" and {len(steps) - 12} more" if len(steps) > 12 else "") if steps else "none"


def _chain(ctx, boot, bk, keys, k: int) -> dict:
    """k bootstraps in a row of unit-modulus messages: each output is multiplied by an encryption
    of other unit-modulus values w (relinearized, rescaled) and brought down to level 0 for the
    next. Each bootstrap's own error is its output against the decryption of its input (what it
    adds, not what the multiplications between add); the end-to-end error is the last output
    against numpy's x w^k. The device memory in use is read after each round, with the round
    before freed. Passes (issue #38) when every bootstrap's own error is within 1 bit of the
    first's and the memory in use does not grow. The rounds' inputs land on level 0 at a scale
    a little off the fresh encryption's (a static value), so one untimed round compiles first."""
    n = boot.slots
    g = np.random.default_rng(5)
    unit = lambda: np.exp(2j * np.pi * g.uniform(0, 1, n))  # noqa: E731
    w_vals, want = unit(), unit()
    w = ckks.encrypt(ckks.encode(w_vals, ctx, level=boot.output_level), ctx, keys.public,
                     HostRandom.insecure_deterministic(11))
    cur = ckks.encrypt(ckks.encode(want, ctx, level=0), ctx, keys.public, HostRandom.insecure_deterministic(12))
    boot_fn = jax.jit(circuits.bootstrap)
    step = jax.jit(lambda c, w, ctx, evk: ckks.level_down(ckks.mul(c, w, ctx, evk), ctx, 0,
                                                          scale=ctx.params.default_scale(0)))
    dec = lambda c: ckks.decode(ckks.decrypt(c, ctx, keys.secret), ctx)  # noqa: E731
    cur = step(boot_fn(cur, ctx, boot, bk), w, ctx, bk.evk)        # the untimed round
    want = want * w_vals
    jax.block_until_ready(boot_fn(cur, ctx, boot, bk))              # compiles for the landed scale
    errs, mem, times = [], [], []
    for i in range(k):
        before = dec(cur)
        t = time.perf_counter()
        out = jax.block_until_ready(boot_fn(cur, ctx, boot, bk))
        times.append((time.perf_counter() - t) * 1e3)
        errs.append(float(np.log2(np.abs(dec(out) - before).max())))
        if i + 1 == k:
            end_to_end = float(np.log2(np.abs(dec(out) - want).max()))
        cur = step(out, w, ctx, bk.evk)
        want = want * w_vals
        del out
        jax.block_until_ready(cur)
        mem.append(_bytes_in_use())
        if (i + 1) % 10 == 0 or i + 1 == k:
            print(f"  chain: {i + 1}/{k} bootstraps, log2 error this one {errs[-1]:.2f}, worst {max(errs):.2f}"
                  + (f", device memory {mem[-1] / 2**30:.3f} GiB" if mem[-1] is not None else ""), flush=True)
    med = statistics.median(times)
    drift = max(errs) - errs[0]
    # a leak raises the ceiling: the most in use over the last 10 rounds (or half of a shorter
    # chain) against the first 10; rounds alternate between two buffer layouts, so comparing the
    # first round with the last would compare their parities
    w = max(1, min(10, k // 2))
    growth = (max(mem[-w:]) - max(mem[:w])) if mem[0] is not None else None
    head, tail = float(np.mean(errs[:10])), float(np.mean(errs[-10:]))
    ok = drift <= 1.0 and (growth is None or growth <= 0)
    summary = (f"{k} bootstraps fed back (each output times an encryption of unit-modulus values, then "
               f"to level 0): each one's own error log2 {errs[0]:.2f} first, {max(errs):.2f} worst "
               f"({drift:+.2f} bits), mean of the first / last 10 {head:.2f} / {tail:.2f}; after all "
               f"{end_to_end:.2f} against numpy; median {med:.2f} ms per bootstrap"
               + (f"; device memory in use at most {max(mem[:w]):,} bytes over the first {w} rounds, "
                  f"{max(mem[-w:]):,} over the last {w} ({growth:+,}; {len(set(mem))} distinct values, "
                  f"changes after rounds {_changes(mem)})" if growth is not None else ""))
    rule = "within 1 bit of the first, " + ("no memory growth" if growth is not None else "memory not measured here")
    print("chain: " + summary + (f"; {rule}: PASS" if ok else ": FAIL"))
    return {"bootstraps": k, "log2_errors": errs, "times_ms": times, "bytes_in_use": mem, "median_ms": med,
            "drift_bits": drift, "memory_growth_bytes": growth, "log2_end_to_end": end_to_end, "pass": ok,
            "summary": summary}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="n16-boot", help="CKKS preset (default n16-boot)")
    ap.add_argument("--slots", type=int, default=None, help="slots (default: N/2, full)")
    ap.add_argument("--runs", type=int, default=10, help="timed bootstraps (median)")
    ap.add_argument("--precision-runs", type=int, default=10, help="bootstraps of fresh random inputs")
    ap.add_argument("--batch", type=int, default=0, help="also time a vmapped batch of this many")
    ap.add_argument("--no-stages", action="store_true", help="skip the per-stage split")
    ap.add_argument("--trace", default=None, metavar="DIR",
                    help="trace one bootstrap (jax.profiler) and print its GPU kernels: span, busy time, top kernels")
    ap.add_argument("--chain", type=int, default=0, metavar="K",
                    help="also run K bootstraps in a row, each output multiplied by a ciphertext and "
                         "brought down to level 0 before the next: each bootstrap's own error and the "
                         "device memory in use after each")
    ap.add_argument("--quick", action="store_true", help="INSECURE toy-boot-n12, few runs")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    results.add_argument(ap, "bootstrap")
    args = ap.parse_args()
    if args.quick:
        args.preset, args.runs, args.precision_runs = "toy-boot-n12", 2, 2
    dev = jax.devices()[0]
    params = ckks.preset(args.preset)
    rng = HostRandom.insecure_deterministic(1)  # benchmark keys only
    t0 = time.perf_counter()
    ctx = ckks.make_context(params)
    keys = ckks.keygen(ctx, rng)
    boot = circuits.make_bootstrapper(ctx, circuits.BootstrapConfig(slots=args.slots))
    t1 = time.perf_counter()
    bk = circuits.gen_bootstrap_keys(ctx, keys.secret, boot, rng, progress=True)
    jax.block_until_ready(bk)
    t2 = time.perf_counter()
    print(f"{params!r}\n{boot!r}\ndevice {dev.device_kind}; context + plans {t1 - t0:.1f} s, keys {t2 - t1:.1f} s "
          f"({len(bk.evk.rotations)} rotation keys)")
    mem = {"plans_gib": _nbytes(boot) / 2**30, "keys_gib": _nbytes(bk) / 2**30, "context_gib": _nbytes(ctx) / 2**30}
    print("memory: plans %.2f GiB, keys %.2f GiB, context %.2f GiB" % tuple(mem.values()))

    n = boot.slots
    g = np.random.default_rng(0)

    def fresh(seed):
        z = g.uniform(-1, 1, n) + 1j * g.uniform(-1, 1, n)
        ct = ckks.encrypt(ckks.encode(z, ctx, level=0), ctx, keys.public, HostRandom.insecure_deterministic(seed))
        return z, ct

    z, ct = fresh(100)
    f = jax.jit(circuits.bootstrap)
    t = time.perf_counter()
    compiled = f.lower(ct, ctx, boot, bk).compile()
    compile_s = time.perf_counter() - t
    hlo = compiled.as_text() or ""
    cmd_buffers = "command_buffer" in hlo
    med, lo, hi = _median_ms(compiled, (ct, ctx, boot, bk), args.runs)
    print(f"bootstrap: median {med:.2f} ms (min {lo:.2f}, max {hi:.2f}) over {args.runs}; first compile "
          f"{compile_s:.1f} s; command_buffer ops in the compiled HLO: {cmd_buffers} (XLA's GPU runtime forms "
          "its command buffers when it runs the program: --trace counts the CUDA graph launches)")

    graph_launches = None
    if args.trace:
        from gpu_trace import print_kernel_summary, save_events, trace_kernels
        totals = trace_kernels(compiled, (ct, ctx, boot, bk), args.trace)
        print_kernel_summary("one bootstrap", totals, top=25)
        graph_launches = getattr(totals, "graph_launches", None)
        save_events(totals, f"{args.trace}/kernels.json.gz")
        with gzip.open(f"{args.trace}/bootstrap_hlo.txt.gz", "wt") as fh:
            fh.write(hlo)  # the compiled program: which XLA fusions the kernels above are

    errs = []
    for i in range(args.precision_runs):
        z, ct = fresh(200 + i)
        out = compiled(ct, ctx, boot, bk)
        got = ckks.decode(ckks.decrypt(out, ctx, keys.secret), ctx)
        errs.append(float(np.log2(np.abs(got - z).max())))
    print(f"precision: log2 max error {max(errs):.2f} (worst of {len(errs)}), mean of maxima "
          f"{np.mean(errs):.2f}; output level {out.level}")

    stages = {}
    if not args.no_stages:
        cur = fresh(300)[1]
        for name, stage in circuits.bootstrapping.STAGES:
            fs = jax.jit(stage)
            stages[name] = _median_ms(fs, (cur, ctx, boot, bk), args.runs)[0]
            cur = fs(cur, ctx, boot, bk)
        print("stages (ms): " + ", ".join(f"{k} {v:.2f}" for k, v in stages.items())
              + f" (sum {sum(stages.values()):.2f})")

    chain = _chain(ctx, boot, bk, keys, args.chain) if args.chain else None

    batched = None
    if args.batch:
        zs = g.uniform(-1, 1, (args.batch, n))
        cts = ckks.encrypt(ckks.encode(zs, ctx, level=0), ctx, keys.public, HostRandom.insecure_deterministic(9))
        fb = jax.jit(jax.vmap(circuits.bootstrap, in_axes=(0, None, None, None)))
        bmed = _median_ms(fb, (cts, ctx, boot, bk), max(2, args.runs // 2))[0]
        batched = {"batch": args.batch, "time": round(bmed / args.batch, 2)}
        print(f"batch {args.batch}: {bmed:.2f} ms ({bmed / args.batch:.2f} ms per ciphertext)")

    row = dict(preset=args.preset, slots=n, device=dev.device_kind, median_ms=med, min_ms=lo, max_ms=hi,
               compile_s=compile_s, command_buffers=cmd_buffers, graph_launches=graph_launches,
               log2_max_error=max(errs),
               output_level=out.level, stages_ms=stages, memory=mem, batched=batched, chain=chain)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(row, fh, indent=2)
    if args.results:
        full = n == ctx.params.slots
        what = "full slots" if full else f"2^{n.bit_length() - 1} slots"
        top = boot.levels[0]
        e = result_entry(f"bootstrap/{args.preset}/slots={n}", f"bootstrap ({what})",
                         f"{args.preset}, N = 2^{ctx.params.n.bit_length() - 1}, 2^{n.bit_length() - 1} slots"
                         f"{'' if full else ' (packed sparse path)'}, levels {top} -> {out.level}",
                         dev.device_kind, unit="ms", time=round(med, 2), clock="wall", batched=batched,
                         notes=(f"median of {args.runs} (min {lo:.2f}); log2 max error {max(errs):.2f} over {len(errs)} "
                                f"fresh inputs, output level {out.level}"
                                + ("; stages " + ", ".join(f"{k} {v:.2f}" for k, v in stages.items())
                                   if stages else "")
                                + f"; compile {compile_s:.0f} s"
                                + (" (XLA's compilation cache on)" if jax.config.jax_compilation_cache_dir else "")
                                + f"; keys {mem['keys_gib']:.1f} GiB"
                                + (f"; {graph_launches} CUDA graph launches in a traced call"
                                   if graph_launches is not None else "")))
        rows = [e]
        if chain:
            rows.append(result_entry(
                f"bootstrap/{args.preset}/slots={n}/chain={chain['bootstraps']}",
                f"bootstrap in a chain of {chain['bootstraps']} (per bootstrap)", f"{args.preset}, {n} slots, each output times a "
                "ciphertext, then down to level 0", dev.device_kind, unit="ms", time=round(chain["median_ms"], 2),
                clock="wall", notes=chain["summary"]))
        results.merge(args.results, "bootstrap", rows)
        print("merged into", args.results)


if __name__ == "__main__":
    main()
