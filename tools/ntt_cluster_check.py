"""GPU check of the single-pass cluster NTT (ffi/ntt_cluster_*) against the CPU handlers (the
reference semantics, which test_ntt.py checks against the Python-integer reference), plus the
round trip, run as a script on the GPU machine:

    python tools/ntt_cluster_check.py                         every shape, GPU against CPU
    python tools/ntt_cluster_check.py --save FILE [--against REF]

The second form compares builds of the kernels module (it uses the public API only, so it runs
under any build): one process over four of the shapes (L = 48 at batch 16, uneven ranges, a new
prime at every item, a tail inside a limb); it saves digests of the GPU's results to FILE and,
given REF (saved under another build), exits non-zero unless the bits are the same.

Every shape has at least 128 polynomials (ffi/tuning.h: kClusterMinPolys), so on sm_90 each runs
the cluster kernel: uneven per-cluster ranges, limb changes inside a cluster's range, repeated
rows (twiddles kept across items), a new prime at every item (every twiddle reload in flight
while the previous item computes), the issue's L = 48 at batches 16 and 64, batches that are
not multiples of 4 (no tail), and tails (the launch's last polynomials, run beside the clusters
by the streamed kernel) that start inside a limb. Exits non-zero on any mismatch.
"""
import os
import subprocess
import sys
import tempfile

SHAPES = [  # (batch, limbs, rows or None)
    (4, 32, None),    # 128 polynomials: the threshold; a tail of 8
    (3, 43, None),    # 129, batch 3: no tail, 8-9 items per cluster
    (16, 48, None),   # the shape: tail of 44 (forward) / 48 (inverse)
    (5, 33, None),    # 165, uneven ranges, no tail
    (8, 20, (0, 0, 1, 1, 1, 2, 0, 0, 3, 3, 3, 3, 4, 4, 4, 1, 1, 4, 5, 5)),  # repeated rows
    # a new prime at every item and 40-43 limbs per cluster (its limb table holds 64)
    (1, 600, tuple(7 * k % 48 for k in range(600))),
    (12, 15, None),   # 180: a tail inside a limb
    (64, 48, None),   # batch 64
]

CHILD = r"""
import hashlib, json, sys, numpy as np, jax, jax.numpy as jnp
from jax_fhe import ops, rns
N = 1 << 16
primes = rns.ntt_primes(30, 48, N)
devices = [jax.devices("gpu")[0]] + ([jax.devices("cpu")[0]] if CPU else [])
ctxs = [jax.device_put(rns.make_context(primes, N), d) for d in devices]
rng = np.random.default_rng(7)
out = []
for batch, limbs, rows in SHAPES:
    used = rows if rows is not None else tuple(range(limbs))
    x = np.stack([rng.integers(0, primes[r], size=(batch, N), dtype=np.uint64) for r in used], 1).astype(np.uint32)
    x[0, 0, :4] = [0, 1, primes[used[0]] - 1, primes[used[0]] - 2]
    res = []
    for dev, ctx in zip(devices, ctxs):
        xd = jax.device_put(jnp.asarray(x), dev)
        X = ops.ntt(xd, ctx, rows=rows)
        res.append([np.asarray(a) for a in (X, ops.intt(X, ctx, rows=rows), ops.intt(xd, ctx, rows=rows))])
    g = res[0]
    out.append({"round_trip": bool(np.array_equal(g[1], x)),
                "digest": [hashlib.sha256(a.tobytes()).hexdigest() for a in g],
                "cpu_mismatches": [int(np.count_nonzero(a != b)) for a, b in zip(g, res[1])] if CPU else None})
json.dump(out, open(sys.argv[1], "w"))
"""

QUICK = [2, 3, 5, 6]  # the shapes of --save: indices into SHAPES


def run_child(shapes, path, cpu):
    """The CHILD over `shapes` into `path` (JSON: per shape the round trip, the SHA-256 of the
    GPU's NTT, INTT(NTT) and INTT, and with `cpu` their mismatch counts against the CPU)."""
    import json
    # run from a neutral folder, with this one last on the path: a package named on PYTHONPATH
    # (another build's, as tools/ntt_bits_each.sh passes) wins over this tree's
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), os.getcwd()) if p)
    r = subprocess.run([sys.executable, "-c", f"SHAPES = {shapes!r}\nCPU = {cpu!r}\n" + CHILD, os.path.abspath(path)],
                       capture_output=True, text=True, timeout=600, cwd=tempfile.gettempdir(), env=env)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        sys.exit("child failed")
    return json.load(open(path))


def compare_builds(path, ref_path):
    import json
    shapes = [SHAPES[i] for i in QUICK]
    got = run_child(shapes, path, cpu=False)
    for shape, g in zip(shapes, got):
        if not g["round_trip"]:
            sys.exit(f"shape {shape}: INTT(NTT(x)) != x")
    if ref_path is None:
        print(f"round trips ok; saved {path}")
        return
    ref = json.load(open(ref_path))
    bad = [shape for shape, g, r in zip(shapes, got, ref) if g["digest"] != r["digest"]]
    if bad:
        sys.exit(f"differs from {ref_path}: shapes {bad}")
    print(f"same bits as {ref_path} ({len(shapes)} shapes, 3 transforms each)")


def main():
    if sys.argv[1:2] == ["--save"]:
        args = sys.argv[2:]
        if len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--against"):
            sys.exit(__doc__)
        return compare_builds(args[0], args[2] if len(args) == 3 else None)
    if sys.argv[1:]:
        sys.exit(__doc__)
    got = run_child(SHAPES, os.path.join(tempfile.gettempdir(), "ntt_cluster_check.json"), cpu=True)
    bad = 0
    for (batch, limbs, rows), g in zip(SHAPES, got):
        ok = g["round_trip"] and not any(g["cpu_mismatches"])
        bad += not ok
        label = (batch, limbs, None if rows is None else f"{len(set(rows))} distinct rows")
        print(f"shape {label}: {'ok' if ok else 'MISMATCH'} (mismatches against the CPU, NTT / "
              f"INTT(NTT) / INTT: {g['cpu_mismatches']}; round trip {g['round_trip']})")
    print(f"{len(SHAPES) - bad} passed, {bad} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
