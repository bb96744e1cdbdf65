"""Encrypted logistic function: a degree-7 polynomial approximation of 1 / (1 + e^-x) on
[-8, 8], evaluated with CKKS on a batch of encrypted vectors in one jitted, vmapped call.

    python examples/ckks_logistic.py                      # small INSECURE set (CPU default)
    python examples/ckks_logistic.py --preset n16-boot    # N = 2^16 (default when a GPU is visible)

Prints the precision of the encrypted result against the same polynomial in float64 (the CKKS
error) and against the true logistic (adds the approximation error), and OK / MISMATCH.
"""
import argparse
import time

import jax
import numpy as np

from jax_fhe import ckks
from jax_fhe.rns import HostRandom

DEGREE = 7
LO, HI = -8.0, 8.0


def fit_logistic(degree: int) -> np.ndarray:
    """Power-basis coefficients c_0..c_degree of a least-squares fit on Chebyshev nodes."""
    t = np.cos(np.pi * (np.arange(400) + 0.5) / 400)
    x = (HI - LO) / 2 * t + (HI + LO) / 2
    cheb = np.polynomial.chebyshev.Chebyshev.fit(x, 1 / (1 + np.exp(-x)), degree)
    return cheb.convert(kind=np.polynomial.Polynomial).coef


def poly7(x, c, ctx, evk):
    """c_0 + c_1 x + ... + c_7 x^7 with depth 4: (low cubic) + x^4 (high cubic). Levels and
    scales of the partial terms differ; ckks.add aligns them."""
    x2 = ckks.mul(x, x, ctx, evk)
    x3 = ckks.mul(x2, x, ctx, evk)
    x4 = ckks.mul(x2, x2, ctx, evk)

    def cubic(a0, a1, a2, a3):
        acc = ckks.add(ckks.mul(x, a1, ctx), a0, ctx)
        acc = ckks.add(acc, ckks.mul(x2, a2, ctx), ctx)
        return ckks.add(acc, ckks.mul(x3, a3, ctx), ctx)

    return ckks.add(cubic(*c[:4]), ckks.mul(x4, cubic(*c[4:]), ctx, evk), ctx)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = "n16-boot" if jax.default_backend() == "gpu" else "toy-n12"
    ap.add_argument("--preset", default=default, choices=sorted(ckks.PRESETS))
    ap.add_argument("--batch", type=int, default=4, help="number of encrypted vectors")
    ap.add_argument("--slots", type=int, default=None, help="slots per vector (default N/2)")
    args = ap.parse_args()

    params = ckks.preset(args.preset)
    print(params)
    t0 = time.perf_counter()
    ctx = ckks.make_context(params)
    keys = ckks.keygen(ctx)  # os.urandom
    print(f"setup (tables + keys): {time.perf_counter() - t0:.1f} s")

    slots = args.slots or params.slots
    rng = np.random.default_rng(0)
    x = rng.uniform(LO, HI, (args.batch, slots))
    c = tuple(float(v) for v in fit_logistic(DEGREE))
    ct = ckks.encrypt(ckks.encode(x / 8, ctx), ctx, keys.public)  # inputs scaled into [-1, 1]
    c_scaled = tuple(ci * 8.0**k for k, ci in enumerate(c))  # p(8 u) as a polynomial in u

    f = jax.jit(jax.vmap(lambda v, ctx, evk: poly7(v, c_scaled, ctx, evk), in_axes=(0, None, None)))
    t0 = time.perf_counter()
    out = jax.block_until_ready(f(ct, ctx, keys.evaluation))
    t1 = time.perf_counter()
    out = jax.block_until_ready(f(ct, ctx, keys.evaluation))
    t2 = time.perf_counter()
    got = ckks.decode(ckks.decrypt(out, ctx, keys.secret), ctx, real=True)

    plain = np.polynomial.polynomial.polyval(x, c)
    true = 1 / (1 + np.exp(-x))
    he = ckks.precision(plain, got)
    approx = ckks.precision(true, got)
    print(f"device: {jax.devices()[0].device_kind}; batch {args.batch} x {slots} slots; "
          f"levels {params.default_level} -> {out.level}")
    print(f"time: first call {t1 - t0:.2f} s (with compile), then {t2 - t1:.3f} s")
    print(f"precision vs float64 polynomial (CKKS error): {he}")
    print(f"precision vs logistic (incl. degree-{DEGREE} fit): {approx}")
    ok = he.mean_bits >= 20 and he.min_bits >= 15
    print("OK" if ok else "MISMATCH")


if __name__ == "__main__":
    main()
