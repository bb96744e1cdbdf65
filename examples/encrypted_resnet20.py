"""Encrypted ResNet-20 inference on CIFAR-10: the pretrained model compiled to one jitted CKKS program.

    python examples/encrypted_resnet20.py --dry-run        # the plan at n16-boot + plaintext accuracies (CPU)
    python examples/encrypted_resnet20.py --images 4       # n16-boot, 4 images encrypted (GPU, large memory)
    python examples/encrypted_resnet20.py --quick          # INSECURE toy-boot-n12, a 2-layer CNN on 8x8 (CPU)

The ResNet-20 (examples/data/resnet20_cifar10.npz, batch norms folded) runs with each ReLU
replaced by a polynomial of jax_fhe.nn.activation (--act: ACTIVATIONS below; by default one of
degree 63), its inputs divided by bounds measured on --calib images (times --margin). jax_fhe.nn.compiler packs an image
multiplexed into 16,384 slots, turns every layer into a slot-space matrix (diagonals, BSGS) and
places a bootstrap before every activation whose levels ran out. Prints the plan, the float
(ReLU) and polynomial models' accuracy, and for the encrypted images: predictions, agreement with
the polynomial model, max logit error against the packed simulation, seconds per image, and
OK / MISMATCH (every encrypted prediction equal to the polynomial model's). Images whose
activation inputs leave their bounds are counted first: there the polynomial diverges.
"""
from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np

DATA = pathlib.Path(__file__).resolve().parent / "data"
QUICK_SPEC = (("conv", 4, 1), ("conv", 8, 2))


#: the activations to choose from: (kind, degrees, eps, calibration margin, StC levels of the
#: bootstrap). The bounds are margin x the largest activation input of the float model on the
#: last 64 images; the other images reach up to 1.76x that, and an input beyond its bound makes
#: the polynomial diverge (encrypted: a wrong prediction). Plaintext ResNet-20 on the 512 images
#: (float ReLU 91.2%), the polynomial model evaluated as the ciphertexts are (no clipping):
#: composite 91.2% at margin 1.25, every image inside its bounds (depth 12, 19 bootstraps);
#: poly63 91.8% at margin 2.0, every image inside (largest input 0.88 of its bound; depth 6,
#: with StC in 2 levels the bootstrap leaves 14 levels: 10 bootstraps); poly31 90.0% at margin
#: 1.25 with 8 images outside their bounds, 5 of them diverging (depth 5, 9 bootstraps; margin 2
#: would cost it 22 points of accuracy).
ACTIVATIONS = {"composite": ("sign", (7, 15, 15), 2.0 ** -7, 1.25, 3),
               "poly63": ("direct", 63, None, 2.0, 2),
               "poly31": ("direct", 31, None, 1.25, 3)}


def setup(quick: bool, calib: int, act_name: str = "poly63", layers: int | None = None,
          margin: float | None = None):
    """(spec, params, x, y, act, bounds, CKKS params name): the model and data of a run.
    ``layers``: keep only the first layers of ResNet-20 with a random dense head (timing only).
    ``margin``: the calibration margin (None: the activation's, ACTIVATIONS)."""
    from jax_fhe import nn
    from jax_fhe.nn import activation, compiler
    x, y = nn.load_cifar10(DATA / "cifar10_test_512.npz")
    if quick:   # 8x8 means of the images, a random 2-layer CNN (checks the pipeline, not accuracy)
        x = x.reshape(len(x), 8, 4, 8, 4, 3).mean(axis=(2, 4))
        spec, params = QUICK_SPEC, nn.init_params(QUICK_SPEC, 3, 10, np.random.default_rng(0))
        act, preset = activation.PolyReLU.direct(3), "toy-boot-n12"
    else:
        spec, params = nn.RESNET20_SPEC, nn.load_resnet20(DATA / "resnet20_cifar10.npz")
        kind, degrees, eps, _, _ = ACTIVATIONS[act_name]
        act = (activation.PolyReLU(sign=activation.composite_sign(degrees, eps)) if kind == "sign"
               else activation.PolyReLU.direct(degrees))
        preset = "n16-boot"
        if layers is not None:
            spec = spec[:layers]
            names = {f"layer{i}/" for i in range(layers)}
            params = {k: v for k, v in params.items() if k[:k.index("/") + 1] in names}
            extra = nn.init_params(spec, 3, 10, np.random.default_rng(0))
            params["dense/kernel"], params["dense/bias"] = extra["dense/kernel"], extra["dense/bias"]
    bounds = compiler.calibrate(spec, params, x[-calib:], margin=margin_of(quick, act_name, margin))
    return spec, params, x, y, act, bounds, preset


def margin_of(quick: bool, act_name: str, margin: float | None = None) -> float:
    """The calibration margin of a run: ``margin``, or the activation's (ACTIVATIONS)."""
    if margin is not None:
        return float(margin)
    return 1.25 if quick else ACTIVATIONS[act_name][3]


def boot_config(quick: bool, act_name: str, slots: int):
    """The BootstrapConfig of a run (ACTIVATIONS' StC levels for ResNet-20)."""
    from jax_fhe import circuits
    return circuits.BootstrapConfig(slots=slots, stc_levels=3 if quick else ACTIVATIONS[act_name][4])


def _positive(text: str) -> float:
    v = float(text)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return v


def add_margin_argument(ap) -> None:
    """--margin (this example and benchmarks/bench_resnet20.py)."""
    ap.add_argument("--margin", type=_positive, default=None,
                    help="activation bounds = margin x the largest input on the --calib images "
                         "(default: the activation's, ACTIVATIONS)")


def add_diagonal_arguments(ap) -> None:
    """--diagonals and --encoded-gib (this example and benchmarks/bench_resnet20.py)."""
    ap.add_argument("--diagonals", choices=("auto", "encoded", "compact"), default="auto",
                    help="hold the layers' diagonals encoded, or compact and expanded in the program "
                         "(auto: encoded layer by layer while they fit --encoded-gib, the rest compact)")
    ap.add_argument("--encoded-gib", type=float, default=None,
                    help="auto's budget for encoded diagonals (default: the device memory limit less what "
                         "the keys hold, 8 GiB of working memory and the compact forms)")


def diagonal_options(ap, args) -> dict:
    """compile_model's compact= and encoded_bytes= from --diagonals and --encoded-gib."""
    compact = {"auto": None, "encoded": False, "compact": True}[args.diagonals]
    if args.encoded_gib is not None and compact is not None:
        ap.error("--encoded-gib goes with --diagonals auto")
    return dict(compact=compact, encoded_bytes=None if args.encoded_gib is None else int(args.encoded_gib * 2**30))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--images", type=int, default=4, help="images to classify encrypted (the first ones)")
    ap.add_argument("--eval", type=int, default=128, help="images for the plaintext accuracies")
    ap.add_argument("--calib", type=int, default=64, help="images (from the end) for the activation bounds")
    add_diagonal_arguments(ap)
    add_margin_argument(ap)
    ap.add_argument("--act", choices=tuple(ACTIVATIONS), default="poly63",
                    help="the ReLU's polynomial (ResNet-20 only; ACTIVATIONS says depth, bootstraps, accuracy)")
    ap.add_argument("--mode", choices=("staged", "whole"), default="staged",
                    help="one jitted call per op (identical stages compile once) or the whole network as one "
                         "XLA executable (one long compilation)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and plaintext accuracies only")
    ap.add_argument("--quick", action="store_true", help="INSECURE toy-boot-n12, a 2-layer CNN on 8x8 inputs")
    ap.add_argument("--layers", type=int, default=None,
                    help="only the first LAYERS layers of ResNet-20 and a random head (timing; accuracy meaningless)")
    args = ap.parse_args()
    diag = diagonal_options(ap, args)   # checked before any work

    import jax
    from jax_fhe import ckks, circuits, nn
    from jax_fhe.nn import compiler
    from jax_fhe.rns import HostRandom

    spec, params, x, y, act, bounds, preset = setup(args.quick, args.calib, args.act, layers=args.layers,
                                                    margin=args.margin)
    cp = ckks.preset(preset)
    bcfg = boot_config(args.quick, args.act, 1)
    boot_level = cp.default_level - bcfg.stc_levels   # the bootstrappers' output level (checked below)
    t0 = time.perf_counter()
    p = compiler.plan(spec, params, cp, act, bounds, input_shape=x.shape[1:], boot_level=boot_level)
    print(p.summary())
    print(f"plan: {time.perf_counter() - t0:.1f} s; activation: depth {act.depth}, max |error| {act.bound:.2e} on [-1, 1]")
    xe, ye = x[:args.eval], y[:args.eval]
    ref = nn.forward(spec, params, xe)
    poly, ratio = compiler.polynomial_forward(spec, params, xe, act, bounds, with_ratio=True)
    print(f"{len(xe)} images: float ReLU model {100 * np.mean(ref.argmax(1) == ye):.1f}%, polynomial model "
          f"{100 * np.mean(poly.argmax(1) == ye):.1f}%, agreement {100 * np.mean(ref.argmax(1) == poly.argmax(1)):.1f}%")
    print(f"largest activation input {ratio.max():.2f} of its bound; " + (
        f"{int((ratio > 1).sum())} images outside their bounds: the polynomial diverges there and their "
        f"encrypted results are not the model's (raise --margin)" if (ratio > 1).any() else "every image inside"))
    if args.dry_run:
        return

    ctx = ckks.make_context(cp)
    boot = circuits.make_bootstrapper(ctx, boot_config(args.quick, args.act, p.slots)) if p.bootstraps else None
    if boot is not None and boot.output_level != boot_level:
        raise SystemExit(f"bootstrapper outputs level {boot.output_level}, the plan assumed {boot_level}")
    rng = HostRandom.insecure_deterministic(1) if args.quick else HostRandom()
    t0 = time.perf_counter()
    keys = ckks.keygen(ctx, rng)
    ek = compiler.gen_keys(ctx, keys.secret, p, boot, rng)
    print(f"keys: {time.perf_counter() - t0:.1f} s")
    model = compiler.compile_model(p, ctx, boot, **diag)
    print(f"diagonals {model.form}: {model.encode_s:.1f} s")
    imgs = x[:args.images]
    ct = compiler.encrypt_image(imgs[0], p, ctx, keys.public, rng)
    staged = args.mode == "staged"
    t0 = time.perf_counter()
    jax.block_until_ready((model.staged if staged else model)(ct, ek))
    print(f"first call ({args.mode}: compilation + run): {time.perf_counter() - t0:.1f} s")
    logits, per_image = compiler.run(model, imgs, ek, keys.public, keys.secret, rng, staged=staged)
    want = compiler.simulate(p, imgs)
    poly_pred = compiler.polynomial_forward(spec, params, imgs, act, bounds).argmax(1)
    pred = logits.argmax(1)
    err = np.abs(logits - want).max() / np.abs(want).max()
    print(f"encrypted predictions {pred.tolist()} labels {y[:args.images].tolist()}")
    print(f"agreement with the polynomial model {100 * np.mean(pred == poly_pred):.1f}%, accuracy "
          f"{100 * np.mean(pred == y[:args.images]):.1f}%, logits within 2^{np.log2(err):.1f} of the simulation, "
          f"{per_image:.3f} s per image (streamed: the host encrypts the next image while the device infers)")
    print("OK" if np.all(pred == poly_pred) else "MISMATCH")


if __name__ == "__main__":
    main()
