"""On the device machine: does a candidate build of the kernels module give the same NTT and INTT
bits as a reference build? One process per build, about 25 s each (tests/ntt_cluster_check.py
runs a process per mode plus the two-phase reference: about 4 minutes for modes 2 and 16).

    python3 scripts/ntt_ab_check.py /tmp/ref.npz              # reference build in jax_fhe/
    python3 scripts/ntt_ab_check.py /tmp/new.npz /tmp/ref.npz # candidate: exits 1 on a difference

Shapes take the default path (the cluster kernel from 128 polynomials on sm_90; the last shape is
below that): L = 48 at batch 16, uneven per-cluster ranges, and 200 limbs with a new prime at
every item (a twiddle reload per item). INTT(NTT(x)) must give back x in every build. Run each
call under `timeout`: a kernel that hangs otherwise holds the device call to its limit.
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np

from jax_fhe import ops, rns

N = 1 << 16
SHAPES = [(16, 48, None), (5, 33, None), (1, 200, tuple(7 * k % 48 for k in range(200))), (3, 7, None)]


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    primes = rns.ntt_primes(30, 48, N)
    ctx = jax.device_put(rns.make_context(primes, N), jax.devices("gpu")[0])
    rng = np.random.default_rng(7)
    out = {}
    for bi, (batch, limbs, rows) in enumerate(SHAPES):
        used = rows if rows is not None else tuple(range(limbs))
        x = np.stack([rng.integers(0, primes[r], size=(batch, N), dtype=np.uint64) for r in used], 1)
        x = x.astype(np.uint32)
        X = ops.ntt(jnp.asarray(x), ctx, rows=rows)
        Y = ops.intt(X, ctx, rows=rows)
        out[f"X{bi}"], out[f"Y{bi}"] = np.asarray(X), np.asarray(Y)
        if not np.array_equal(out[f"Y{bi}"], x):
            sys.exit(f"shape {(batch, limbs)}: INTT(NTT(x)) != x")
    np.savez(sys.argv[1], **out)
    if len(sys.argv) == 3:
        ref = np.load(sys.argv[2])
        bad = [k for k in out if not np.array_equal(out[k], ref[k])]
        if bad:
            sys.exit(f"differs from the reference build: {bad}")
        print(f"same bits as the reference build ({len(out)} arrays)")
    else:
        print("round trips ok")


if __name__ == "__main__":
    main()
