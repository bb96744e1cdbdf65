"""Encrypted logistic-regression training (HELR, Han et al. 2019) on MNIST 3 vs 8, beside the
same algorithm in float64.

    python examples/helr_mnist.py                          # n16-boot (GPU): 14x14, batch 1024, 32 iterations
    python examples/helr_mnist.py --preset toy-boot-n12    # INSECURE toy set (CPU): 7x7, batch 256

The 1,000 digits of examples/data/mnist_3v8.npz are split (seeded) into 800 for training and 200
held out. Images are downsampled by 2x2 means (14x14 = 196 features; --pool 4: 7x7), scaled to
[0, 1], given a bias feature and zero-padded to a power of two (256). Each iteration draws a
mini-batch with repetition from the training set; the client encrypts the batches, the server
trains on them (jax_fhe.apps.helr: Nesterov-accelerated gradient ascent with HELR's cubic
sigmoid, bootstrapping the weights when their levels run out), the client decrypts the weights.

Prints the test accuracy and AUC of the plaintext and the encrypted model on the 200 held-out
digits, the decrypted weights' error against the plaintext run (max |w_enc - w| / max |w|), the
training time, and OK / MISMATCH: error <= 2^-10, accuracy within 1 point of the plaintext run
and (for 32 iterations) >= 92%.
"""
from __future__ import annotations

import argparse
import pathlib
import time

import jax
import numpy as np

DATA = pathlib.Path(__file__).resolve().parent / "data" / "mnist_3v8.npz"


def load_digits(pool: int, test: int = 200, seed: int = 0):
    """(x_train, y_train, x_test, y_test): images pooled by pool x pool means, in [0, 1]."""
    d = np.load(DATA)
    x, y = d["x"].astype(np.float64), d["y"].astype(np.int64)
    k = 28 // pool
    if k * pool != 28:
        raise ValueError(f"--pool must divide 28, got {pool}")
    x = x.reshape(-1, k, pool, k, pool).mean(axis=(2, 4)).reshape(len(x), -1) / 255.0
    perm = np.random.default_rng(seed).permutation(len(x))
    te, tr = perm[:test], perm[test:]
    return x[tr], y[tr], x[te], y[te]


def prepare(pool: int, batch: int, iterations: int, learning_rate: float, seed: int):
    """The training problem: (config, mini-batches float[T, batch, F], test rows, test labels)."""
    from jax_fhe.apps import helr
    x_tr, y_tr, x_te, y_te = load_digits(pool, seed=seed)
    features = 1 << x_tr.shape[1].bit_length()  # bias + pixels, padded to a power of two
    config = helr.HELRConfig(features=features, iterations=iterations, learning_rate=learning_rate)
    z = helr.design_matrix(x_tr, y_tr, features)
    batches = helr.sample_batches(z, batch, iterations, np.random.default_rng(seed + 1))
    rows = helr.design_matrix(x_te, np.ones(len(x_te), dtype=int), features)  # no label folded
    return config, batches, rows, y_te


def setup(preset: str, config, batch: int, rng=None, progress=None):
    """Context, keys, bootstrapper, plan and HELR keys for ``preset`` (host work; at n16-boot
    the keys take a while and a few GiB)."""
    from jax_fhe import ckks, circuits
    from jax_fhe.apps import helr
    params = ckks.preset(preset)
    ctx = ckks.make_context(params)
    keys = ckks.keygen(ctx, rng)
    boot = circuits.make_bootstrapper(ctx, circuits.BootstrapConfig(slots=config.features))
    plan = helr.make_plan(params, config, batch, boot.output_level)
    hk = helr.gen_keys(ctx, keys.secret, boot, plan, rng, progress=progress)
    return ctx, keys, boot, plan, hk


def report(name: str, w, rows, y) -> tuple:
    from jax_fhe.apps import helr
    acc, area = helr.accuracy(w, rows, y), helr.auc(rows @ w, y)
    print(f"{name:>10}: test accuracy {100 * acc:.1f}%, AUC {area:.4f}")
    return acc, area


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    gpu = jax.default_backend() == "gpu"
    ap.add_argument("--preset", default="n16-boot" if gpu else "toy-boot-n12",
                    help="CKKS preset with bootstrapping (default: n16-boot on a GPU, toy-boot-n12 on a CPU)")
    ap.add_argument("--pool", type=int, default=None, help="downsampling factor (default 2: 14x14; toy: 4)")
    ap.add_argument("--batch", type=int, default=None, help="mini-batch size (default 1024; toy: 256)")
    ap.add_argument("--iterations", type=int, default=32)
    ap.add_argument("--learning-rate", type=float, default=1.0, help="gamma = this / batch")
    ap.add_argument("--seed", type=int, default=0, help="data split and mini-batch sampling")
    args = ap.parse_args()
    toy = args.preset.startswith("toy")
    pool = args.pool or (4 if toy else 2)
    batch = args.batch or (256 if toy else 1024)

    from jax_fhe.apps import helr
    config, batches, rows, y_te = prepare(pool, batch, args.iterations, args.learning_rate, args.seed)
    w_plain = helr.train_plain(batches, config)
    print(f"MNIST 3 vs 8: {28 // pool}x{28 // pool} images, {config.features} features, batch {batch}, "
          f"{config.iterations} iterations, 800 training / 200 test digits")
    acc_p, _ = report("plaintext", w_plain, rows, y_te)

    t0 = time.perf_counter()
    ctx, keys, boot, plan, hk = setup(args.preset, config, batch)  # keys from os.urandom
    t1 = time.perf_counter()
    inputs = helr.encrypt_inputs(ctx, keys.public, batches, plan)
    u = helr.encrypt_zero_weights(ctx, keys.public, plan)
    jax.block_until_ready(inputs)
    t2 = time.perf_counter()
    u = jax.block_until_ready(helr.train(u, inputs, plan, ctx, hk, boot))
    t3 = time.perf_counter()
    w_enc = helr.decrypt_weights(u, ctx, keys.secret, plan)
    print(f"{ctx.params!r}\n{boot!r}; device {jax.devices()[0].device_kind}")
    print(f"setup {t1 - t0:.1f} s, client encryption {t2 - t1:.1f} s, encrypted training {t3 - t2:.1f} s "
          f"(first run: compilation included; {plan.bootstraps} bootstraps, levels {plan.levels[:4]}...)")
    acc_e, _ = report("encrypted", w_enc, rows, y_te)
    err = np.abs(w_enc - w_plain).max() / np.abs(w_plain).max()
    print(f"weights: max |w_enc - w_plain| / max |w_plain| = 2^{np.log2(err):.1f}")
    print("OK" if checks(err, acc_e, acc_p, config.iterations) else "MISMATCH")


def checks(err: float, acc_enc: float, acc_plain: float, iterations: int) -> bool:
    """The issue's bars: weights within 2^-10 (relative) of the plaintext run, test accuracy
    within 1 point of it, and >= 92% (the last for the full 32-iteration training only)."""
    ok = err <= 2.0 ** -10 and abs(acc_enc - acc_plain) <= 0.01
    if iterations >= 32:
        ok = ok and acc_enc >= 0.92
    else:
        print(f"(the 92% accuracy bar applies to 32 iterations; {iterations} were run)")
    return ok


if __name__ == "__main__":
    main()
