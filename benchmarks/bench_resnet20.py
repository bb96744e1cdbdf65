"""ResNet-20 benchmark: encrypted CIFAR-10 inference (jax_fhe.nn) latency per image with its bootstrap share, compile time, memory and accuracy.

    python benchmarks/bench_resnet20.py --runs 5 --out $OUT/resnet20.json   # n16-boot ResNet-20 (GPU)
    python benchmarks/bench_resnet20.py --layers 4 --runs 3                # conv + stage 1 only (timing, ~8 GiB of diagonals)
    python benchmarks/bench_resnet20.py --quick                            # INSECURE toy-boot-n12 CNN (checks the script)

Timing (--mode: the staged runner, one jitted call per op, or the whole program as one
executable): the first call (compilation + one run), then --runs warm calls on one image
(seconds per image: their median); then one staged call with each op waited for gives the split
by layer and by kind (bootstrap, linear, act, add, rotsum); the bootstrap share = (bootstraps in
the plan) x (one bootstrap's time in that split) / per-image time. --batch B also times B
images in one vmapped call (throughput: seconds per image of the batch). Accuracy: --images images encrypted, their
predictions against the labels and against the polynomial (plaintext) model, in chunks of
ACCURACY_CHUNK images with the --out file rewritten after each (a run stopped by a time limit
keeps what it finished); the float ReLU
and polynomial models' accuracies on --eval images beside them. Prints a table; ``--out FILE``
writes JSON; ``--results`` merges the row into benchmarks/results/apps.json (the results page).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))


#: images per step of the accuracy pass (the --out file is rewritten after each)
ACCURACY_CHUNK = 16
#: images whose logits are compared with the packed float64 simulation (compiler.simulate)
SIMULATED_IMAGES = 4


def _gib(tree) -> float:
    import jax
    return sum(int(x.size) * x.dtype.itemsize for x in jax.tree_util.tree_leaves(tree) if hasattr(x, "dtype")) / 2**30


def main() -> None:
    import encrypted_resnet20 as ex
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="warm single-image calls timed")
    ap.add_argument("--images", type=int, default=8, help="images classified encrypted for the accuracy")
    ap.add_argument("--start", type=int, default=0,
                    help="the first of those images (runs over [start, start + images) combine by their JSON)")
    ap.add_argument("--eval", type=int, default=512, help="images for the plaintext accuracies")
    ap.add_argument("--calib", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="INSECURE toy-boot-n12, a 2-layer CNN on 8x8")
    ap.add_argument("--layers", type=int, default=None,
                    help="only the first LAYERS layers of ResNet-20 and a random head (timing; accuracy meaningless)")
    ex.add_diagonal_arguments(ap)
    ex.add_margin_argument(ap)
    ap.add_argument("--act", choices=tuple(ex.ACTIVATIONS), default="poly63",
                    help="the ReLU's polynomial (examples/encrypted_resnet20.py ACTIVATIONS)")
    ap.add_argument("--mode", choices=("staged", "whole"), default="staged",
                    help="time one jitted call per op (staged: identical stages compile once) or the whole "
                         "program as one executable (whole: one compilation of everything)")
    ap.add_argument("--batch", type=int, default=1,
                    help="also time this many images in one vmapped call (throughput; 1: skip)")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    ap.add_argument("--combine", nargs="+", default=None, metavar="JSON",
                    help="print the encrypted accuracy and agreement over the images of these --out files "
                         "(runs over disjoint --start ranges) and exit")
    import results
    results.add_argument(ap, "apps")
    args = ap.parse_args()
    if args.combine:
        combine(args.combine)
        return
    diag = ex.diagonal_options(ap, args)   # checked before any work
    if args.quick:
        args.runs, args.images, args.eval = 2, 2, 64
    results.refuse_quick_default(ap, args.results, args.quick, "apps")

    import jax
    from jax_fhe import ckks, circuits, nn
    from jax_fhe.nn import compiler
    from jax_fhe.rns import HostRandom

    dev = jax.devices()[0]
    started = time.perf_counter()
    at = lambda: f"[{time.perf_counter() - started:4.0f} s]"  # noqa: E731  (where a device call's time goes)
    spec, params, x, y, act, bounds, preset = ex.setup(args.quick, args.calib, args.act, layers=args.layers,
                                                       margin=args.margin)
    if args.images < 1:
        ap.error(f"--images must be at least 1, got {args.images}")
    if not 0 <= args.start < len(x):
        ap.error(f"--start must be in [0, {len(x)}), got {args.start}")
    ctx = ckks.make_context(ckks.preset(preset))
    # the slot count does not depend on the levels
    slots = compiler.plan(spec, params, ctx.params, act, bounds, input_shape=x.shape[1:],
                          boot_level=ctx.params.max_level).slots
    boot = circuits.make_bootstrapper(ctx, ex.boot_config(args.quick, args.act, slots))
    p = compiler.plan(spec, params, ctx.params, act, bounds, input_shape=x.shape[1:], boot_level=boot.output_level)
    print(at(), p.summary())
    xe, ye = x[:args.eval], y[:args.eval]
    ref = nn.forward(spec, params, xe).argmax(1)
    stop = min(len(x), args.start + args.images)
    # the polynomial model once, over the evaluated images and those the accuracy pass encrypts
    poly_all, ratio_all = compiler.polynomial_forward(spec, params, x[:max(len(xe), stop)], act, bounds, with_ratio=True)
    poly_all = poly_all.argmax(1)
    poly, ratio = poly_all[:len(xe)], ratio_all[:len(xe)]
    print(at(), f"{len(xe)} images: largest activation input {ratio.max():.2f} of its bound, "
          f"{int((ratio > 1).sum())} images outside their bounds", flush=True)
    rng = HostRandom.insecure_deterministic(1)   # benchmark keys only
    t0 = time.perf_counter()
    keys = ckks.keygen(ctx, rng)
    ek = compiler.gen_keys(ctx, keys.secret, p, boot if p.bootstraps else None, rng)
    t1 = time.perf_counter()
    model = compiler.compile_model(p, ctx, boot if p.bootstraps else None, **diag)
    mem = {"keys_gib": _gib(ek), "diagonals_gib": _gib(model.transforms)}
    print(at(), f"keys {t1 - t0:.1f} s, diagonals {model.form} {model.encode_s:.1f} s; memory: "
          + ", ".join(f"{k[:-4]} {v:.2f} GiB" for k, v in mem.items()))
    ct = compiler.encrypt_image(x[0], p, ctx, keys.public, rng)
    infer = model.staged if args.mode == "staged" else model
    t0 = time.perf_counter()
    jax.block_until_ready(infer(ct, ek))
    first = time.perf_counter() - t0
    print(at(), f"first call ({args.mode}: compilation + one run) {first:.1f} s", flush=True)
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        jax.block_until_ready(infer(ct, ek))
        times.append(time.perf_counter() - t0)
    per_image = statistics.median(times)
    # the split: one staged call with every op waited for (its total exceeds a plain call by the waits)
    split = {}
    jax.block_until_ready(model.staged(ct, ek, timings=split))
    kinds = {op.name: op.kind for op in p.ops}
    by_kind = {}
    for name, sec in split.items():
        k = "bootstrap" if name == "bootstrap" else kinds[name]
        by_kind[k] = by_kind.get(k, 0.0) + sec
    print("split (s): " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])))
    boot_s = split["bootstrap"] / p.bootstraps if p.bootstraps else None
    batch_s = None
    if args.batch > 1:   # throughput: B images in one vmapped call
        cts = compiler.encrypt_image(x[:args.batch], p, ctx, keys.public, rng)
        run_b = lambda: jax.block_until_ready(model.batch(cts, ek, staged=args.mode == "staged"))  # noqa: E731
        run_b()
        bts = []
        for _ in range(max(2, args.runs // 2)):
            t0 = time.perf_counter()
            run_b()
            bts.append(time.perf_counter() - t0)
        batch_s = statistics.median(bts)
        print(f"batch of {args.batch}: {batch_s:.3f} s, {batch_s / args.batch:.3f} s per image")
    stats = dev.memory_stats() or {}   # the most the timed calls held (GPU; the CPU reports none)
    if "peak_bytes_in_use" in stats:
        mem.update(peak_gib=stats["peak_bytes_in_use"] / 2**30, limit_gib=stats.get("bytes_limit", 0) / 2**30)
        print(at(), f"device memory: peak {mem['peak_gib']:.1f} GiB of a {mem['limit_gib']:.1f} GiB limit")
    out = dict(device=dev.device_kind, preset=preset, layers=args.layers or len(spec), slots=p.slots, bootstraps=p.bootstraps,
               diagonals=p.diagonals, diagonals_form=model.form, compact_layers=len(model.compact), rotation_keys=len(p.rotations), first_call_s=first,
               act=args.act, act_depth=act.depth, mode=args.mode, per_image_s=per_image, runs_s=times, bootstrap_s=boot_s, split_s=by_kind,
               split_layers_s=split, batch=args.batch, batch_s=batch_s,
               batch_per_image_s=(batch_s / args.batch) if batch_s else None,
               bootstrap_share=(p.bootstraps * boot_s / per_image) if boot_s else None,
               eval_images=len(xe), float_accuracy=float(np.mean(ref == ye)), poly_accuracy=float(np.mean(poly == ye)),
               poly_agreement_float=float(np.mean(ref == poly)), memory=mem, start=args.start,
               margin=ex.margin_of(args.quick, args.act, args.margin),
               eval_max_activation_ratio=float(ratio.max()), eval_outside_bounds=int((ratio > 1).sum()))
    # the accuracy pass in chunks, the --out file rewritten after each: a run stopped by a time
    # limit keeps the images it finished (--combine joins runs over disjoint ranges)
    pred, poly_sel, logit_err, outside = [], [], [], []
    for lo in range(args.start, stop, ACCURACY_CHUNK):
        chunk = slice(lo, min(stop, lo + ACCURACY_CHUNK))
        logits, _ = compiler.run(model, x[chunk], ek, keys.public, keys.secret, rng, staged=args.mode == "staged")
        pred += logits.argmax(1).tolist()
        poly_sel += poly_all[chunk].tolist()
        outside += [chunk.start + int(i) for i in np.flatnonzero(ratio_all[chunk] > 1)]
        if not logit_err:   # the packed float64 simulation is slow (every diagonal): the first images only
            k = min(SIMULATED_IMAGES, len(logits))
            want = compiler.simulate(p, x[chunk][:k])
            logit_err.append(float(np.abs(logits[:k] - want).max() / np.abs(want).max()))
        labels = np.asarray(y[args.start:args.start + len(pred)])
        out.update(images=len(pred), encrypted_accuracy=float(np.mean(np.asarray(pred) == labels)),
                   encrypted_agreement_poly=float(np.mean(np.asarray(pred) == np.asarray(poly_sel))),
                   predictions=pred, poly_predictions=poly_sel, labels=labels.tolist(), outside_bounds=outside,
                   logit_error_log2=float(np.log2(logit_err[0])), logit_error_images=min(SIMULATED_IMAGES, len(pred)))
        if args.out:
            with open(args.out, "w") as f:
                json.dump(out, f, indent=1)
        print(at(), f"images {args.start}-{args.start + len(pred) - 1}: encrypted accuracy "
              f"{100 * out['encrypted_accuracy']:.1f}%, agreement {100 * out['encrypted_agreement_poly']:.1f}%", flush=True)
    for k, v in out.items():
        print(f"{k:26s} {v}")
    if args.results and args.layers is None:
        name = "ResNet-20 CIFAR-10, one image" if not args.quick else "toy CNN (INSECURE), one image"
        row = results.entry(f"nn/resnet20/{preset}", name, f"{preset}, {p.slots} slots, {p.bootstraps} bootstraps",
                            dev.device_kind, unit="ms", time=round(1e3 * per_image, 1),
                            notes=f"{args.mode}; encrypted accuracy {100 * out['encrypted_accuracy']:.1f}% on "
                                  f"{len(pred)} (images {args.start}-{args.start + len(pred) - 1}), first call {first:.1f} s")
        results.merge(args.results, "apps", [row])


def combine(paths) -> dict:
    """The encrypted accuracy and agreement with the polynomial model over several runs' images
    (each image counted once; overlapping ranges are an error)."""
    seen, pred, poly, labels = set(), [], [], []
    for path in paths:
        with open(path) as f:
            r = json.load(f)
        idx = range(r["start"], r["start"] + len(r["predictions"]))
        if seen & set(idx):
            raise SystemExit(f"{path}: images {idx.start}-{idx.stop - 1} overlap an earlier file's")
        seen |= set(idx)
        pred += r["predictions"]
        poly += r["poly_predictions"]
        labels += r["labels"]
    pred, poly, labels = map(np.asarray, (pred, poly, labels))
    out = dict(images=len(pred), encrypted_accuracy=float(np.mean(pred == labels)),
               encrypted_agreement_poly=float(np.mean(pred == poly)), poly_accuracy=float(np.mean(poly == labels)))
    print(f"{out['images']} images: encrypted accuracy {100 * out['encrypted_accuracy']:.1f}%, agreement with "
          f"the polynomial model {100 * out['encrypted_agreement_poly']:.1f}% (polynomial model "
          f"{100 * out['poly_accuracy']:.1f}%)")
    return out


if __name__ == "__main__":
    main()
