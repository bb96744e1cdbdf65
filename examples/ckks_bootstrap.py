"""Bootstrapping: compute until the levels run out, refresh the ciphertext, keep computing.

    python examples/ckks_bootstrap.py                       # INSECURE toy-boot-n12 (CPU default)
    python examples/ckks_bootstrap.py --preset n16-boot     # N = 2^16, 2^15 slots (default on a GPU)

Encrypts a vector x of unit-modulus complex numbers and multiplies it, level by level, by an
encrypted vector w of the same kind (x w^k keeps modulus 1, so the error reads the same at every
step) until level 0; bootstraps (one jitted call) and multiplies on, for --rounds bootstraps.
Every step prints the level and log2 of the largest error against numpy.
"""
import argparse
import time

import jax
import numpy as np

from jax_fhe import ckks, circuits


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = "n16-boot" if jax.default_backend() == "gpu" else "toy-boot-n12"
    ap.add_argument("--preset", default=default, choices=["n16-boot", "toy-boot-n12"])
    ap.add_argument("--rounds", type=int, default=2, help="bootstraps (default 2)")
    args = ap.parse_args()

    params = ckks.preset(args.preset)
    print(params)
    t0 = time.perf_counter()
    ctx = ckks.make_context(params)
    keys = ckks.keygen(ctx)  # os.urandom
    boot = circuits.make_bootstrapper(ctx)  # full slots
    bk = circuits.gen_bootstrap_keys(ctx, keys.secret, boot, progress=True)
    print(f"{boot!r}\nsetup (tables, keys, bootstrapping keys): {time.perf_counter() - t0:.1f} s")

    rng = np.random.default_rng(0)
    x = np.exp(2j * np.pi * rng.uniform(0, 1, boot.slots))
    w = np.exp(2j * np.pi * rng.uniform(0, 1, boot.slots))
    ct = ckks.encrypt(ckks.encode(x, ctx), ctx, keys.public)
    w_ct = ckks.encrypt(ckks.encode(w, ctx), ctx, keys.public)
    want = x

    mul = jax.jit(lambda a, b, ctx, evk: ckks.mul(a, b, ctx, evk))  # one compilation per level
    bootstrap = jax.jit(circuits.bootstrap)

    def report(what, c):
        got = ckks.decode(ckks.decrypt(c, ctx, keys.secret), ctx)
        err = np.abs(got - want).max()
        print(f"  {what:<36s} level {c.level:2d}   log2 max error {np.log2(err):7.2f}")
        return err

    report("fresh encryption", ct)
    worst = 0.0
    for r in range(args.rounds):
        while ct.level > 0:
            ct = mul(ct, w_ct, ctx, bk.evk)
            want = want * w
            worst = max(worst, report("x w^k", ct))
        t = time.perf_counter()
        ct = jax.block_until_ready(bootstrap(ct, ctx, boot, bk))
        dt = time.perf_counter() - t
        # the first two bootstraps compile (the second's input lands on level 0 by another route,
        # so its static scale differs); bench_bootstrap.py times the bootstrap alone
        label = f"bootstrap {r + 1} ({dt * 1e3:.0f} ms{', compiling' if r < 2 else ''})"
        worst = max(worst, report(label, ct))
    ct = mul(ct, w_ct, ctx, bk.evk)
    want = want * w
    worst = max(worst, report("x w^k after the last", ct))
    # each bootstrap adds about 2^-20 (the multiplications by |w| = 1 do not amplify it)
    ok = np.log2(worst) < -15 + np.log2(max(1, args.rounds))
    print(f"worst log2 error over all steps {np.log2(worst):.2f}: {'OK' if ok else 'MISMATCH'}")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
