"""BFV and BGV at CAT's parameters: every operation of CAT's Tables II and III (N = 2^15, 128-bit,
t = 786433; presets ``bfv.preset("cat-n15")`` / ``bgv.preset("cat-n15")``, BGV at its top level),
beside CAT's RTX 4090 figures, and the element-wise operations against their HBM floor.

What is timed (one ciphertext, and per ciphertext of one vmapped call over ``--batch``):

* encode / decode (batch encoding), decrypt: jitted; encrypt (public key): not jittable (each
  call draws a fresh key on the host; the device samples the noise from it), timed as the plain call.
* add (ciphertext + ciphertext), multiply_plain (ciphertext x a MulOperand: the plaintext lifted
  to the q primes and NTT-transformed beforehand, ``mul_operand``), multiply_plain_lift (ciphertext
  x a Plaintext of coefficients mod t: that lift and NTT inside the call), multiply and square (no relinearization, as in
  SEAL's and CAT's tables: BFV scale-and-round, BGV the tensor product), relinearize (of a
  degree-2 product), rotate one step (``rotate_rows(ct, 1)``), rotate random, rotate columns.
* "rotate random" is SEAL's ``rotate_*_random``: a rotation by a step (default 5000, or 5000 mod
  N/2) with SEAL's default keys, those of +-2^i, i.e. one rotation per term of the step's
  non-adjacent form (5000 = 4096 + 1024 - 128 + 8: four key switches; SEAL's random steps
  average about five terms, CAT's random / one-step ratios are 4.0-4.3).

Every output of the one-ciphertext call is decrypted and compared with numpy mod t before
anything is timed. Timing as in bench_ckks.py / bench_klss.py: jitted function, warm-up call,
then the median over ``--trials`` of (elapsed for ``--calls`` back-to-back calls) / calls,
each trial ended by block_until_ready; batched rows: one vmapped call over B ciphertexts / B
(at least 8 calls per trial, so that dispatch overlaps device work). Arguments are the
ciphertexts, the context (BGV: ``ctx.for_levels([level])``) and the keys; nothing is closed
over but static steps.

HBM floor of the element-wise operations: the bytes of their inputs read once plus their
outputs written once, over the copy bandwidth measured in the same process
(bench_kernels.copy_bandwidth: a jitted ``x + 1`` over 1 GiB, read + write, by wall time). A
ciphertext polynomial at a level of L limbs is P = L N 4 bytes (uint32 residues); a
ciphertext 2P (3P after a product); a MulOperand P:

=====================  ========================================  ==============================
operation              read + written                            cat-n15 (L = 24, N = 2^15)
=====================  ========================================  ==============================
add                    2 ciphertexts (4P) + 1 ciphertext (2P)    6P      = 18,874,368 B
multiply_plain         1 ciphertext + MulOperand + 1 ciphertext  5P      = 15,728,640 B
BGV multiply (tensor)  2 ciphertexts (4P) + degree 2 (3P)        7P      = 22,020,096 B
BGV square (tensor)    1 ciphertext (2P) + degree 2 (3P)         5P      = 15,728,640 B
=====================  ========================================  ==============================

with P = 24 x 32768 x 4 = 3,145,728 B (``floor_bytes``; the test checks this table). ``ratio`` = time / floor: for one ciphertext (a ciphertext of 6-22 MB fits in a
50 MB L2 and a lone call is mostly host dispatch: read it with care) and per ciphertext of the
batch (B = 32 moves 0.4-0.7 GB per call: HBM). The must-show target is ratio <= 1.5 and, for
BFV multiply, relinearization and every rotation, 10x below CAT's RTX 4090 figure.

    python benchmarks/bench_bfv_bgv.py [--out run.json]             # GPU, cat-n15 (~2-3 min)
    python benchmarks/bench_bfv_bgv.py --results                    # and update the page's JSON
    python benchmarks/bench_bfv_bgv.py --schemes bgv --ops add,multiply --trace /tmp/tr
    python benchmarks/bench_bfv_bgv.py --quick                      # CPU check, toy-n12 (~30 s)

``--results`` merges the rows into benchmarks/results/bfv_bgv.json (wall time; per ciphertext of
the vmapped call as ``batched``; floor and ratio for the element-wise rows; CAT's figure as
``peer``), from which ``results_page.py`` renders the "BFV and BGV" table of RESULTS.md.
``--trace DIR`` also prints the GPU kernels of one batched call of each element-wise operation
and their device time per ciphertext against the floor.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from bench_ckks import BATCHED_CALLS
from bench_kernels import copy_bandwidth
from bench_klss import time_median
from jax_fhe import bfv, bgv, ops
from jax_fhe.rns import HostRandom
from results import add_argument as add_results_argument
from results import entry as result_entry
from results import git_commit, today
from results import merge as merge_results
from results import refuse_quick_default

SCHEMES = {"bfv": bfv, "bgv": bgv}
CAT_SOURCE = {"bfv": "CAT Table II, RTX 4090", "bgv": "CAT Table III, RTX 4090"}
#: CAT's RTX 4090 figures (µs), Tables II and III (N = 2^15, L = 16, log2 Q = 881); BFV has no decode row
CAT_4090_US = {
    "bfv": {"encode": 339, "encrypt": 427, "decrypt": 471, "add": 3, "multiply": 3675, "multiply_plain": 556,
            "multiply_plain_lift": 556, "square": 4157, "relinearize": 4607, "rotate_one_step": 2633, "rotate_random": 11299,
            "rotate_columns": 1623},
    "bgv": {"encode": 371, "decode": 480, "encrypt": 1294, "decrypt": 519, "add": 6, "multiply": 17,
            "multiply_plain": 191, "multiply_plain_lift": 191, "square": 5, "relinearize": 3169, "rotate_one_step": 2981,
            "rotate_random": 11837, "rotate_columns": 2786},
}
#: the must-show targets: 10x below CAT's figure (BFV multiply, relinearization, every rotation) ...
TEN_X = {("bfv", "multiply"), ("bfv", "relinearize"), ("bgv", "relinearize")} | {
    (s, r) for s in SCHEMES for r in ("rotate_one_step", "rotate_random", "rotate_columns")}
#: ... and within 1.5x of the HBM floor (the element-wise operations)
ELEMENTWISE = {("bfv", "add"), ("bfv", "multiply_plain"), ("bgv", "add"), ("bgv", "multiply_plain"),
               ("bgv", "multiply"), ("bgv", "square")}
FLOOR_GOAL = 1.5
OPS = ("encode", "decode", "encrypt", "decrypt", "add", "multiply_plain", "multiply_plain_lift", "multiply",
       "square", "relinearize", "rotate_one_step", "rotate_random", "rotate_columns")
LABEL = {"encode": "encode (batch)", "decode": "decode (batch)", "encrypt": "encrypt (public key)",
         "decrypt": "decrypt", "add": "add", "multiply_plain": "multiply_plain",
         "multiply_plain_lift": "multiply_plain, Plaintext",
         "multiply": "multiply (no relinearization)", "square": "square (no relinearization)",
         "relinearize": "relinearize", "rotate_one_step": "rotate rows one step",
         "rotate_random": "rotate rows random step", "rotate_columns": "rotate columns"}
RANDOM_STEP = 5000


def naf(k: int) -> list:
    """The non-adjacent form of k > 0: signed powers of two summing to k, no two adjacent."""
    terms, bit = [], 0
    while k:
        if k & 1:
            d = 2 - (k & 3)          # +1 if k = 1 mod 4, -1 if k = 3 mod 4
            terms.append(d << bit)
            k -= d
        k >>= 1
        bit += 1
    return sorted(terms, key=abs, reverse=True)


def floor_bytes(op: str, scheme: str, limbs: int, n: int) -> int | None:
    """Bytes an element-wise operation must read and write (module docstring), None for the
    others: P = limbs n 4 per polynomial."""
    if (scheme, op) not in ELEMENTWISE:
        return None
    poly = limbs * n * 4
    return {"add": 6 * poly, "multiply_plain": 5 * poly, "multiply": 7 * poly, "square": 5 * poly}[op]


@dataclasses.dataclass
class Op:
    """One timed operation: ``fn`` over the named arguments (those in BATCH_ARGS get the batch
    axis under vmap), ``jit`` (False: timed as the plain call), ``want(a, b, c)`` the expected
    slots (numpy) of its one-ciphertext output from the input slots (None: checked by hand)."""
    name: str
    fn: Callable
    args: tuple
    jit: bool = True
    want: Callable | None = None


def _rot(v, k, n):
    return np.roll(v.reshape(-1, 2, n // 2), -k, axis=-1).reshape(v.shape)


def operations(mod, ctx, keys, random_step: int, t: int, n: int) -> list:
    """The operations of CAT's table for scheme module ``mod`` (closures over static values only)."""
    terms = naf(random_step)

    def rotate_random(x, ctx, evk):
        for s in terms:
            x = mod.rotate_rows(x, s, ctx, evk)
        return x

    pk, rng = keys.public, HostRandom.insecure_deterministic(7)  # benchmark data only
    return [
        Op("encode", lambda v, ctx: mod.encode(v, ctx), ("vals", "ctx")),
        Op("decode", lambda pt, ctx: mod.decode(pt, ctx), ("pt", "ctx")),
        Op("encrypt", lambda pt: mod.encrypt(pt, ctx, pk, rng), ("pt",), jit=False, want=lambda a, b, c: c),
        Op("decrypt", lambda x, ctx, sk: mod.decrypt(x, ctx, sk), ("x", "ctx", "sk")),
        Op("add", lambda x, y, ctx: mod.add(x, y, ctx), ("x", "y", "ctx"), want=lambda a, b, c: (a + b) % t),
        Op("multiply_plain", lambda x, op, ctx: mod.mul(x, op, ctx), ("x", "op", "ctx"),
           want=lambda a, b, c: a * c % t),
        Op("multiply_plain_lift", lambda x, pt, ctx: mod.mul(x, pt, ctx), ("x", "pt", "ctx"),
           want=lambda a, b, c: a * c % t),
        Op("multiply", lambda x, y, ctx: mod.mul(x, y, ctx, relinearize=False), ("x", "y", "ctx"),
           want=lambda a, b, c: a * b % t),
        Op("square", lambda x, ctx: mod.square(x, ctx, relinearize=False), ("x", "ctx"),
           want=lambda a, b, c: a * a % t),
        Op("relinearize", lambda d, ctx, evk: mod.relinearize(d, ctx, evk), ("d", "ctx", "evk"),
           want=lambda a, b, c: a * b % t),
        Op("rotate_one_step", lambda x, ctx, evk: mod.rotate_rows(x, 1, ctx, evk), ("x", "ctx", "evk"),
           want=lambda a, b, c: _rot(a, 1, n)),
        Op("rotate_random", rotate_random, ("x", "ctx", "evk"), want=lambda a, b, c: _rot(a, random_step, n)),
        Op("rotate_columns", lambda x, ctx, evk: mod.rotate_columns(x, ctx, evk), ("x", "ctx", "evk"),
           want=lambda a, b, c: np.roll(a.reshape(2, -1), 1, axis=0).reshape(-1)),
    ]


BATCH_ARGS = ("vals", "pt", "op", "x", "y", "d")


def make_keys(mod, ctx, ops_wanted, steps):
    """The keys the wanted operations need (the secret always; the public key for "encrypt",
    relinearization for "relinearize", the rotation keys of ``steps``, the column swap)."""
    rng = HostRandom.insecure_deterministic(3)  # benchmark data only
    sk = mod.gen_secret_key(ctx, rng)
    pk = mod.gen_public_key(ctx, sk, rng) if "encrypt" in ops_wanted else None
    evk = mod.EvalKeys(relin=mod.gen_relin_key(ctx, sk, rng) if "relinearize" in ops_wanted else None,
                       rotations=mod.gen_rotation_keys(ctx, sk, steps, rng, progress=False),
                       columns=(mod.gen_galois_key(ctx, sk, ops.conjugation_element(ctx.params.n), rng)
                                if "rotate_columns" in ops_wanted else None), params=ctx.params)
    return mod.KeySet(secret=sk, public=pk, evaluation=evk)


def bench_scheme(scheme: str, preset: str, ops_wanted, *, batch, calls, trials, random_step, bw, put,
                 trace=None) -> list:
    """Rows (dicts) of every wanted operation of one scheme."""
    mod = SCHEMES[scheme]
    params = mod.preset(preset)
    n, t = params.n, params.plain_modulus
    step = random_step % (n // 2)
    t0 = time.perf_counter()
    full = mod.make_context(params)
    steps = sorted(({1} if "rotate_one_step" in ops_wanted else set())
                   | ({s % (n // 2) for s in naf(step)} if "rotate_random" in ops_wanted else set()))
    keys = put(make_keys(mod, full, ops_wanted, steps))
    level = params.max_level if scheme == "bgv" else 0
    ctx = put(full.for_levels([level]) if scheme == "bgv" else full)
    limbs = len(params.rows(level))
    count = len(steps) + (keys.evaluation.relin is not None) + (keys.evaluation.columns is not None)
    print(f"\n{params!r}\ncontext and keys ({count} switching keys) in {time.perf_counter() - t0:.1f} s; "
          f"level {level} ({limbs} limbs); random step {step} = {' '.join(f'{s:+d}' for s in naf(step))}")
    rng = np.random.default_rng(1)
    a, b, c = (rng.integers(0, t, (batch, n)) for _ in range(3))
    # inputs under the secret key (public-key encryption is timed as "encrypt"; eager, it costs
    # more host time before anything is measured)
    enc = lambda v, seed: mod.encrypt(mod.encode(v, ctx), ctx, keys.secret, HostRandom.insecure_deterministic(seed))  # noqa: E731
    xs, ys = put(enc(a, 11)), put(enc(b, 12))
    pts = put(mod.encode(c, ctx))
    ds = put(jax.jit(lambda x, y, ctx: mod.mul(x, y, ctx, relinearize=False))(xs, ys, ctx)) \
        if "relinearize" in ops_wanted else None
    prep = (lambda pt: mod.mul_operand(pt, ctx, level)) if scheme == "bgv" else (lambda pt: mod.mul_operand(pt, ctx))
    mops = put(jax.jit(prep)(pts))
    batched = {"vals": put(jnp.asarray(c.astype(np.uint32))), "pt": pts, "op": mops, "x": xs, "y": ys, "d": ds}
    single = {k: (v[0] if k not in ("pt", "op") else dataclasses.replace(v, data=v.data[0]))
              for k, v in batched.items() if v is not None}
    shared = {"ctx": ctx, "evk": keys.evaluation, "sk": keys.secret}
    dec = jax.jit(lambda x, ctx, sk: mod.decode(mod.decrypt(x, ctx, sk), ctx))
    rows = []
    for op in operations(mod, ctx, keys, step, t, n):
        if op.name not in ops_wanted:
            continue
        args1 = [single.get(k, shared.get(k)) for k in op.args]
        argsb = [batched.get(k, shared.get(k)) for k in op.args]
        f1 = jax.jit(op.fn) if op.jit else op.fn
        start = time.perf_counter()
        out = jax.block_until_ready(f1(*args1))
        first = time.perf_counter() - start                 # compile + one call
        _check(op, out, mod, ctx, keys, dec, a[0], b[0], c[0], single, scheme)
        t1 = time_median(f1, *args1, calls=calls if op.jit else max(1, calls // 4), trials=trials) * 1e3
        if op.jit:
            fb = jax.jit(jax.vmap(op.fn, in_axes=tuple(0 if k in BATCH_ARGS else None for k in op.args)))
        else:
            fb = op.fn                                     # encrypt takes any batch shape
        start = time.perf_counter()
        jax.block_until_ready(fb(*argsb))
        first_b = time.perf_counter() - start
        tb = time_median(fb, *argsb, calls=max(BATCHED_CALLS, calls // batch) if op.jit else 1,
                         trials=trials if op.jit else min(trials, 3)) * 1e3 / batch
        row = {"scheme": scheme, "op": op.name, "preset": preset, "level": level, "limbs": limbs, "n": n,
               "t": t, "us": t1, "us_per_ct_batched": tb, "batch": batch, "jit": op.jit,
               "first_call_s": round(first, 2), "first_call_batched_s": round(first_b, 2)}
        cat = CAT_4090_US[scheme].get(op.name)
        if cat:
            row.update(cat_us=cat, speedup=cat / t1, speedup_batched=cat / tb)
        nbytes = floor_bytes(op.name, scheme, limbs, n)
        if nbytes:
            fl = nbytes / bw * 1e6
            row.update(bytes=nbytes, floor_us=fl, ratio=t1 / fl, ratio_batched=tb / fl)
            if trace:
                row.update(_trace(fb, argsb, f"{trace}/{scheme}_{op.name}", batch, fl, op.name))
        if op.name == "rotate_random":
            row["random_step"], row["naf"] = step, naf(step)
        rows.append(row)
        print(_line(row), flush=True)
    return rows


def _check(op, out, mod, ctx, keys, dec, a, b, c, single, scheme):
    """Raise SystemExit unless the one-ciphertext output decrypts to what numpy gives."""
    if op.name == "encode":
        got, want = np.asarray(mod.decode(out, ctx)), c
    elif op.name == "decode":
        got, want = np.asarray(out), c
    elif op.name == "decrypt":
        got, want = np.asarray(mod.decode(out, ctx)), a
    else:
        got, want = np.asarray(dec(out, ctx, keys.secret)), op.want(a, b, c)
    if not np.array_equal(got.astype(np.int64), np.asarray(want).astype(np.int64)):
        raise SystemExit(f"{scheme} {op.name}: the output does not decrypt to the expected slots (a bug: not timed)")


def _trace(fb, argsb, path, batch, floor_us, name):
    from gpu_trace import print_kernel_summary, trace_kernels
    totals = trace_kernels(fb, argsb, path)
    if not totals:
        return {}
    print_kernel_summary(f"{name}, batch {batch}", totals, top=6)
    dev = totals.busy / batch
    return {"device_us_per_ct_batched": dev, "ratio_device_batched": dev / floor_us}


def _line(r) -> str:
    cat = f"{r['cat_us']:8.0f} {r['speedup']:7.1f}x {r['speedup_batched']:7.1f}x" if "cat_us" in r else f"{'-':>8} {'-':>8} {'-':>8}"
    fl = (f"{r['floor_us']:8.2f} {r['ratio']:6.2f} {r['ratio_batched']:6.2f}" if "floor_us" in r
          else f"{'-':>8} {'-':>6} {'-':>6}")
    first = f" {r['first_call_s'] + r['first_call_batched_s']:6.1f}" if "first_call_s" in r else ""
    return f"{r['scheme']:4s} {LABEL[r['op']]:30s} {r['us']:10.1f} {r['us_per_ct_batched']:10.1f} {cat} {fl}{first}"


def header(batch: int) -> str:
    return (f"{'':4s} {'operation':30s} {'us':>10s} {f'us/ct B={batch}':>10s} {'CAT us':>8s} {'x CAT':>8s} "
            f"{'x CAT B':>8s} {'floor us':>8s} {'ratio':>6s} {'rat. B':>6s} {'1st s':>6s}")


def goal_of(scheme: str, op: str) -> str | None:
    if (scheme, op) in TEN_X:
        return f"≥ 10× faster than CAT: ≤ {CAT_4090_US[scheme][op] / 10:g} µs"
    if (scheme, op) in ELEMENTWISE:
        return f"≤ {FLOOR_GOAL}× the HBM floor"
    return None


def result_entries(rows, device_kind: str, bw: float) -> list:
    """The rows in the results format (benchmarks/results.py), CAT's figure as ``peer``."""
    out = []
    for r in rows:
        scheme, op = r["scheme"], r["op"]
        level = f", level {r['level']}" if scheme == "bgv" else ""
        params = (f"{r['preset']}: N = 2^{r['n'].bit_length() - 1}, t = {r['t']}, {r['limbs']} × 30-bit q primes"
                  f"{level}")
        batched = dict(batch=r["batch"], time=round(r["us_per_ct_batched"], 1))
        extra = {}
        if "floor_us" in r:
            batched["ratio"] = round(r["ratio_batched"], 2)
            extra = dict(floor=dict(time=round(r["floor_us"], 2), bytes=r["bytes"], bandwidth_gbps=round(bw / 1e9)),
                         ratio=round(r["ratio"], 2))
        notes = None
        if op == "rotate_random":
            notes = (f"step {r['random_step']} = {' '.join(f'{s:+d}' for s in r['naf'])}: one key switch per term, "
                     f"with keys for ±2^i as SEAL's rotate_*_random")
        elif op == "encrypt":
            notes = "the plain call (not jittable): a fresh 256-bit key drawn on the host (HostRandom), the noise sampled from it on the device"
        elif op == "multiply_plain":
            notes = "times a MulOperand: the plaintext lifted to the q primes and NTT-transformed beforehand (mul_operand)"
        elif op == "multiply_plain_lift":
            notes = "the Plaintext (coefficients mod t) is lifted to the q primes and NTT-transformed in the call"
        e = result_entry(f"{scheme}/{op}/{r['preset']}", f"{scheme.upper()} {LABEL[op]}", params, device_kind,
                         time=round(r["us"], 1), clock="wall", batched=batched, notes=notes, **extra)
        if "cat_us" in r:
            e["peer"] = {"figure": f"{r['cat_us']} µs", "source": CAT_SOURCE[scheme]}
        goal = goal_of(scheme, op)
        if goal:
            e["goal"] = goal
        out.append(e)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="cat-n15", help="BFV and BGV preset (the same name in both)")
    ap.add_argument("--schemes", default="bfv,bgv")
    ap.add_argument("--ops", default=",".join(OPS), help=f"comma-separated, of {', '.join(OPS)}")
    ap.add_argument("--batch", type=int, default=32, help="ciphertexts per vmapped call")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--random-step", type=int, default=RANDOM_STEP, help="the 'rotate random' step (mod N/2)")
    ap.add_argument("--trace", default=None, help="folder: trace one batched call of each element-wise op")
    ap.add_argument("--quick", action="store_true", help="CPU check: toy-n12, batch 2, few calls (~30 s of CPU time)")
    ap.add_argument("--out", default=None, help="write this run's rows as JSON here")
    add_results_argument(ap, "bfv_bgv")
    args = ap.parse_args(argv)
    refuse_quick_default(ap, args.results, args.quick, "bfv_bgv")
    ops_wanted = set(args.ops.split(","))
    unknown = ops_wanted - set(OPS) or set(args.schemes.split(",")) - set(SCHEMES)
    if unknown:
        ap.error(f"unknown operation or scheme: {sorted(unknown)}")
    if args.quick:
        args.preset, args.batch, args.calls, args.trials = "toy-n12", 2, 2, 1
    start = time.perf_counter()
    dev = jax.devices()[0]
    put = lambda tree: jax.device_put(tree, dev)  # noqa: E731
    bw = copy_bandwidth(dev, 1 << (24 if args.quick else 30))
    print(f"device: {dev.device_kind} ({dev.platform}); copy bandwidth {bw / 1e9:.0f} GB/s; commit {git_commit()}")
    print(header(args.batch))
    rows = []
    for scheme in args.schemes.split(","):
        rows += bench_scheme(scheme, args.preset, ops_wanted, batch=args.batch, calls=args.calls,
                             trials=args.trials, random_step=args.random_step, bw=bw, put=put, trace=args.trace)
    print("\n" + header(args.batch))
    for r in rows:
        print(_line(r))
    misses = [f"{r['scheme']} {r['op']}" for r in rows
              if ((r["scheme"], r["op"]) in TEN_X and r["speedup"] < 10)
              or ((r["scheme"], r["op"]) in ELEMENTWISE and r["ratio_batched"] > FLOOR_GOAL)]
    if not args.quick:
        print("must-show targets (10x CAT; batched ratio <= 1.5): " + ("all met" if not misses else
                                                                      "missed by " + ", ".join(misses)))
    print(f"total {time.perf_counter() - start:.0f} s (1st s: compile and first call, single + batched)")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(
            {"device": dev.device_kind, "copy_bandwidth_gbs": bw / 1e9, "commit": git_commit(), "date": today(),
             "rows": rows, "missed": misses}, indent=1) + "\n")
        print(f"wrote {args.out}")
    if args.results:
        merge_results(args.results, "bfv_bgv", result_entries(rows, dev.device_kind, bw))
        print(f"merged {len(rows)} rows into {args.results}; python benchmarks/results_page.py renders RESULTS.md")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
