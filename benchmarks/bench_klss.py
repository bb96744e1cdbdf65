"""KLSS against hybrid key switching, level by level: the measurements behind keyswitch="auto".

For each parameter set (default: n16-boot and cat-n15, CAT's N = 2^15 chain in 32-bit words) and
each level, one key switch of one polynomial (``jax_fhe.rlwe.keyswitch.key_switch``, jitted) with
hybrid tables and with KLSS tables, with a KLSS key converted from the hybrid key (the same
first level): the two outputs are compared bit for bit before anything is timed. Also timed:
the hoistable part alone (``decompose``). ``--variants`` adds the same chains with smaller digits
(alpha = 1, 2, 3, 4, 6 where smaller than the preset's, as many special primes as alpha): KLSS's
own regime (the paper's r = 1). ``--extra-t`` times KLSS again with one more T prime at the top
level: the marginal cost of a T prime, which is what 32-bit words cost (r' 31-bit primes where
the paper's 64-bit design has about r'/2 primes of 60 bits).

Timing: warm-up (compile) call, then the median over trials of (elapsed for ``calls`` calls) /
calls, each trial ended by block_until_ready.

    python benchmarks/bench_klss.py [--out run.json]             # GPU: every level of both sets
    python benchmarks/bench_klss.py --record                     # also record for keyswitch="auto"
    python benchmarks/bench_klss.py --variants --extra-t --levels 0,7,14,21,28
    python benchmarks/bench_klss.py --presets cat-n15 --blocks 2,4,8 --levels 14
    python benchmarks/bench_klss.py --quick                      # CPU check (toy-n12-klss)

``--record`` writes the points into jax_fhe/rlwe/keyswitch_measurements.json (the table
:mod:`jax_fhe.rlwe.selector` reads: device, date, commit, per point both latencies), replacing
earlier points with the same fingerprint on this platform. ``--results`` merges the top level
of each set into benchmarks/results/keyswitch.json (for RESULTS.md).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pathlib
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jax_fhe import ckks, ops, rlwe, rns
from jax_fhe.rlwe import keyswitch, klss, selector
from jax_fhe.rns import HostRandom
from results import add_argument as add_results_argument
from results import entry as result_entry
from results import git_commit, today
from results import merge as merge_results
from results import refuse_quick_default

MEASUREMENTS = pathlib.Path(rlwe.__file__).resolve().parent / selector.MEASUREMENTS


def time_median(fn, *args, calls: int, trials: int) -> float:
    """Median over ``trials`` of the mean time (ms) of ``calls`` back-to-back calls."""
    jax.block_until_ready(fn(*args))
    per = []
    for _ in range(trials):
        t0 = time.perf_counter()
        out = None
        for _ in range(calls):
            out = fn(*args)
        jax.block_until_ready(out)
        per.append((time.perf_counter() - t0) / calls * 1e3)
    return statistics.median(per)


def variants(params, alphas) -> list:
    """``params`` and the same q chain with digits of ``alpha`` rows and as many special primes
    (the largest of the preset's), for each alpha below the preset's."""
    out = [params]
    for a in alphas:
        if a < params.alpha and a <= len(params.p_primes):
            out.append(dataclasses.replace(params, alpha=a, p_primes=params.p_primes[:a],
                                           name=f"{params.name}-a{a}"))
    return out


def with_blocks(sets: list, blocks: str | None) -> list:
    """Each set with each KLSS block size of ``blocks`` (its klss_block option), or as it is."""
    if not blocks:
        return sets
    return [dataclasses.replace(p, keyswitch_options={**dict(p.keyswitch_options), "klss_block": int(b)},
                                name=f"{p.name}-b{int(b)}") for p in sets for b in blocks.split(",")]


def key_mib(arr) -> float:
    return arr.size * arr.dtype.itemsize / 2**20


def bench_set(p, levels, *, calls, trials, extra_t, put) -> list:
    n = p.n
    ring = put(rns.make_context(p.all_primes, n))
    r = HostRandom.insecure_deterministic(1)  # benchmark data only
    s = ops.ntt(jnp.asarray(rns.to_residues(r.ternary((2, n)), p.all_primes)), ring)
    hkey = put(rlwe.gen_switching_key(ring, s[0], s[1], num_q=p.num_q, alpha=p.alpha, sigma=p.sigma, rng=r))
    layout = selector.klss_layout_of(p)
    if layout is None:
        print(f"{p.name}: KLSS cannot be built (T would need more than 16 primes); skipped")
        return []
    kkey = put(klss.key_from_hybrid(hkey, ring, layout))
    need = klss.required_t_bits(layout)
    print(f"\n{p!r}\n{layout!r}; the paper's 60-bit T would take {math.ceil(need / 60)} primes; keys: hybrid "
          f"{key_mib(hkey.data):.0f} MiB, KLSS {key_mib(kkey.data):.0f} MiB")
    print(f"{'level':>5} {'L':>3} {'d':>3} {'A':>3} {'hybrid ms':>10} {'KLSS ms':>9} {'speedup':>8} "
          f"{'dec h/k ms':>12} {'NTT h/k':>10} {'choice':>7}")
    switch = jax.jit(keyswitch.key_switch)
    decompose = jax.jit(keyswitch.decompose)
    points = []
    for level in levels:
        rows = p.rows(level)
        ht = put(rlwe.make_hybrid_tables(p.all_primes, rows, p.special_rows, p.alpha))
        kt = put(klss.make_klss_tables(rows, p.special_rows, layout))
        x = put(jnp.asarray(r.uniform_mod([p.q_primes[i] for i in rows], n)))
        same = np.array_equal(np.asarray(switch(x, hkey, ring, ht)), np.asarray(switch(x, kkey, ring, kt)))
        if not same:
            raise SystemExit(f"{p.name} level {level}: KLSS differs from hybrid (a bug: not timed)")
        th = time_median(switch, x, hkey, ring, ht, calls=calls, trials=trials)
        tk = time_median(switch, x, kkey, ring, kt, calls=calls, trials=trials)
        dh = time_median(decompose, x, ring, ht, calls=calls, trials=trials)
        dk = time_median(decompose, x, ring, kt, calls=calls, trials=trials)
        counts = klss.op_counts(kt)
        pt = {"fingerprint": selector.fingerprint(p, level), "params": p.name, "level": level, "limbs": len(rows),
              "alpha": p.alpha, "digits": len(kt.digits), "blocks": len(kt.blocks), "klss_block": layout.block,
              "t_count": layout.t_count, "t_bits_needed": round(need, 1), "t_count_60bit": math.ceil(need / 60),
              "hybrid_ms": round(th, 4), "klss_ms": round(tk, 4), "hybrid_decompose_ms": round(dh, 4),
              "klss_decompose_ms": round(dk, 4), "ops": counts,
              "key_mib": {"hybrid": round(key_mib(hkey.data), 1), "klss": round(key_mib(kkey.data), 1)}}
        choice = "klss" if tk < th else "hybrid"
        print(f"{level:5d} {len(rows):3d} {len(kt.digits):3d} {len(kt.blocks):3d} {th:10.3f} {tk:9.3f} "
              f"{th / tk:7.2f}x {dh:5.3f}/{dk:5.3f} {counts['hybrid']['ntt']:4d}/{counts['klss']['ntt']:4d} "
              f"{choice:>7}")
        points.append(pt)
    if extra_t and points:
        top = max(levels)
        pool = rns.ntt_primes(31, layout.t_count + 1, n, exclude=p.all_primes)
        lay2 = klss.make_layout(p.all_primes, p.num_q, p.alpha, n, layout.block, pool)
        k2 = put(klss.key_from_hybrid(hkey, ring, lay2))
        rows = p.rows(top)
        kt2 = put(klss.make_klss_tables(rows, p.special_rows, lay2))
        x = put(jnp.asarray(r.uniform_mod([p.q_primes[i] for i in rows], n)))
        t2 = time_median(switch, x, k2, ring, kt2, calls=calls, trials=trials)
        pt = next(q for q in points if q["level"] == top)
        marginal = t2 - pt["klss_ms"]
        pt["klss_ms_one_more_t_prime"] = round(t2, 4)
        pt["t_prime_marginal_ms"] = round(marginal, 4)
        half = layout.t_count - math.ceil(need / 60)
        print(f"level {top}: {layout.t_count + 1} T primes {t2:.3f} ms against {pt['klss_ms']:.3f}: "
              f"{marginal:.3f} ms per T prime; 32-bit words need {half} primes more than 60-bit ones "
              f"(~{half * marginal:.3f} ms, {100 * half * marginal / pt['klss_ms']:.0f}% of KLSS at this level, "
              f"if a 60-bit prime cost what a 31-bit one does)")
        del k2
    return points


def record(points: list, device: str, path: pathlib.Path) -> None:
    """Add this run to the selector's table, dropping earlier points it supersedes."""
    doc = json.loads(path.read_text())
    plat = selector.platform()
    new = {pt["fingerprint"] for pt in points}
    runs = []
    for run in doc.get("runs", []):
        if run.get("platform") == plat:
            run = {**run, "points": [q for q in run.get("points", []) if q.get("fingerprint") not in new]}
        if run.get("points"):
            runs.append(run)
    slim = [{k: v for k, v in pt.items() if k != "ops"} for pt in points]
    runs.append({"device": device, "platform": plat, "date": today(), "commit": git_commit(), "points": slim})
    doc["runs"] = runs
    doc["about"] = ("Key-switching latency of hybrid and KLSS per parameter set and level, written by "
                    "benchmarks/bench_klss.py --record. keyswitch='auto' picks the faster method per level from "
                    "the latest point on the current platform; without a point it picks hybrid.")
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"recorded {len(points)} points for platform {plat!r} in {path}")


def parse_levels(text: str | None, p) -> list:
    if not text:
        return list(range(p.max_level + 1))
    return sorted({min(int(v), p.max_level) for v in text.split(",")})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="n16-boot,cat-n15", help="comma-separated CKKS presets")
    ap.add_argument("--levels", default=None, help="comma-separated levels (default: every level)")
    ap.add_argument("--variants", action="store_true", help="also the chains with digits of 1, 2, 3, 4, 6 rows")
    ap.add_argument("--extra-t", action="store_true", help="time one more T prime at the top level")
    ap.add_argument("--blocks", default=None,
                    help="comma-separated KLSS block sizes to sweep (klss_block; default: the layout's own)")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="CPU check: toy-n12-klss, levels 0, 3, 6")
    ap.add_argument("--record", action="store_true", help=f"record the points in {MEASUREMENTS.name}")
    ap.add_argument("--out", default=None, help="write this run's JSON here")
    add_results_argument(ap, "keyswitch")
    args = ap.parse_args()
    refuse_quick_default(ap, args.results, args.quick, "keyswitch")
    if args.quick:
        args.presets, args.levels, args.calls, args.trials = "toy-n12-klss", args.levels or "0,3,6", 2, 3
    dev = jax.devices()[0]
    put = lambda t: jax.device_put(t, dev)  # noqa: E731
    print(f"device: {dev.device_kind} ({dev.platform}), commit {git_commit()}")
    points = []
    for name in args.presets.split(","):
        base = ckks.preset(name.strip())
        for p in with_blocks(variants(base, (1, 2, 3, 4, 6)) if args.variants else [base], args.blocks):
            points += bench_set(p, parse_levels(args.levels, p), calls=args.calls, trials=args.trials,
                                extra_t=args.extra_t, put=put)
    run = {"device": dev.device_kind, "platform": selector.platform(), "date": today(), "commit": git_commit(),
           "points": points}
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(run, indent=1) + "\n")
    if args.record:
        if args.quick:
            ap.error("--quick points are toy instances: not recorded")
        record(points, dev.device_kind, MEASUREMENTS)
    if args.results:
        entries = []
        for name in {pt["params"] for pt in points}:
            top = max((pt for pt in points if pt["params"] == name), key=lambda q: q["level"])
            params = f"{name}, level {top['level']} ({top['limbs']} limbs, {top['digits']} digits)"
            for method in ("hybrid", "klss"):
                extra = (f"blocks of {top['klss_block']}, T = {top['t_count']} 31-bit primes; "
                         if method == "klss" else "")
                entries.append(result_entry(
                    f"keyswitch-{method}/{name}/level={top['level']}", f"key switch ({method})", params,
                    dev.device_kind, unit="ms", time=round(top[f"{method}_ms"], 3), clock="wall",
                    notes=f"{extra}bench_klss.py; same bits as the other method"))
        merge_results(args.results, "keyswitch", entries)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
