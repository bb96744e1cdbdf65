"""GPU check of the single-pass cluster NTT (ffi/ntt_cluster_cuda.cu) against the two-phase
kernels (which test_ntt.py checks against the CPU and the Python reference), plus the round trip,
run as a script on the GPU machine (the kernel is chosen per process by JAX_FHE_NTT_CLUSTER, so
each path runs in its own subprocess):

    python tests/ntt_cluster_check.py [MODE ...]   (JAX_FHE_NTT_CLUSTER values; default 2 3 8 16)
    python tests/ntt_cluster_check.py --save FILE [--against REF]

The second form compares builds of the kernels module: one process on the default path over
four of the shapes (L = 48 at batch 16, uneven ranges, a new prime at every item, a tail inside a
limb), under a minute; it saves the results to FILE and, given REF (saved under another build),
exits non-zero unless the bits are the same.

Shapes cover fewer polynomials than clusters, uneven per-cluster ranges, limb changes inside a
cluster's range, repeated rows (twiddles kept across items), a new prime at every item (every
twiddle reload in flight while the previous item computes), the issue's L = 48, batch 16, and a
tail (the launch's last polynomials, run beside the clusters by the streamed kernel;
JAX_FHE_NTT_TAIL sets its size) that starts inside a limb.
Exits non-zero on any mismatch. test_cross_backend.py's "cluster-2", "cluster-3", "cluster-8" and
"cluster-16" variants are the pytest form (one shape, against the CPU). The first form took
46 s for modes 2, 8 and 16 on an H100 (session 22; all shapes ok, tails included).
"""
import os
import subprocess
import sys

SHAPES = [  # (batch, limbs, rows or None)
    (1, 1, None), (1, 3, None), (3, 7, None), (2, 20, None), (16, 48, None), (5, 33, None),
    (1, 12, (0, 0, 1, 1, 1, 2, 0, 0, 3, 3, 3, 3)), (2, 6, (4, 4, 4, 1, 1, 4)),
    # a new prime at every item and 40-43 limbs per cluster (its limb table holds 64)
    (1, 600, tuple(7 * k % 48 for k in range(600))),
    # by default a tail of 8 polynomials (the streamed kernel beside the clusters) inside a limb
    (12, 15, None),
]

CHILD = r"""
import sys, numpy as np, jax, jax.numpy as jnp
from jax_fhe import ops, rns
N = 1 << 16
primes = rns.ntt_primes(30, 48, N)
ctx = jax.device_put(rns.make_context(primes, N), jax.devices("gpu")[0])
rng = np.random.default_rng(7)
out = {}
for bi, (batch, limbs, rows) in enumerate(SHAPES):
    used = rows if rows is not None else tuple(range(limbs))
    x = np.stack([rng.integers(0, primes[r], size=(batch, N), dtype=np.uint64) for r in used], 1).astype(np.uint32)
    x[0, 0, :4] = [0, 1, primes[used[0]] - 1, primes[used[0]] - 2]
    xd = jnp.asarray(x)
    X = ops.ntt(xd, ctx, rows=rows)
    Y = ops.intt(X, ctx, rows=rows)
    Z = ops.intt(xd, ctx, rows=rows)
    out[f"x{bi}"] = x
    out[f"X{bi}"], out[f"Y{bi}"], out[f"Z{bi}"] = map(np.asarray, (X, Y, Z))
np.savez(sys.argv[1], **out)
"""


QUICK = [4, 5, 8, 9]  # the shapes of --save: indices into SHAPES


def run_child(shapes, path, mode=None):
    """The CHILD over `shapes` into `path`, JAX_FHE_NTT_CLUSTER=mode (None: the default path)."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_FHE_NTT_CLUSTER"}
    if mode is not None:
        env["JAX_FHE_NTT_CLUSTER"] = mode
    r = subprocess.run([sys.executable, "-c", f"SHAPES = {shapes!r}\n" + CHILD, path], env=env,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        sys.exit(f"child JAX_FHE_NTT_CLUSTER={mode} failed")
    import numpy as np
    return np.load(path)


def compare_builds(path, ref_path):
    import numpy as np
    shapes = [SHAPES[i] for i in QUICK]
    got = run_child(shapes, path)
    for bi, shape in enumerate(shapes):
        if not np.array_equal(got[f"Y{bi}"], got[f"x{bi}"]):
            sys.exit(f"shape {shape}: INTT(NTT(x)) != x")
    if ref_path is None:
        print(f"round trips ok; saved {path}")
        return
    ref = np.load(ref_path)
    bad = [k for k in got.files if not np.array_equal(got[k], ref[k])]
    if bad:
        sys.exit(f"differs from {ref_path}: {bad}")
    print(f"same bits as {ref_path} ({len(got.files)} arrays)")


def main():
    import numpy as np
    if sys.argv[1:2] == ["--save"]:
        args = sys.argv[2:]
        if len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--against"):
            sys.exit(__doc__)
        return compare_builds(args[0], args[2] if len(args) == 3 else None)
    files = {}
    modes = sys.argv[1:] or ["2", "3", "8", "16"]
    for mode in modes + ["0"]:
        files[mode] = run_child(SHAPES, os.path.join("/tmp", f"ntt_cluster_{mode}.npz"), mode)
    bad = 0
    for mode in modes:
        for bi, shape in enumerate(SHAPES):
            a, b = files[mode], files["0"]
            ok = all(np.array_equal(a[f"{k}{bi}"], b[f"{k}{bi}"]) for k in "XYZ")
            ok = ok and np.array_equal(a[f"Y{bi}"], a[f"x{bi}"])
            if not ok:
                bad += 1
                for k in "XYZ":
                    d = np.argwhere(a[f"{k}{bi}"] != b[f"{k}{bi}"])
                    print(f"  {k}: {len(d)} mismatches, first {d[:5].tolist()}")
            batch, limbs, rows = shape
            label = (batch, limbs, None if rows is None else f"{len(set(rows))} distinct rows")
            print(f"JAX_FHE_NTT_CLUSTER={mode}, shape {label}: {'ok' if ok else 'MISMATCH'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
