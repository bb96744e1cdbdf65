"""Time the packing GEMM of ExpPack (jax_fhe.pir.modgemm.mod_matmul) at VIPIR's hybrid shapes,
the FFI kernel (``fused=True``) against the XLA path, and compare with the HBM floor.

    python benchmarks/bench_modgemm.py --slots 1024 --cols 2 64 --json out.json

Shape per (slot, limb) entry: planes int8[4 M, K] (M = blocks = 256, K = n = 1280) times
uint32[K, C] (C = 2 x queries). The full 16 GiB database has 4096 slots x 3 limbs; --slots
scales the problem (time is linear in it). Floor: planes + rhs + output bytes over --bandwidth
(default 2.9e12 B/s, the measured H100 copy rate). Both paths are checked equal on the
timed data before timing.
"""
from __future__ import annotations

import argparse
import json

import jax
import jax.numpy as jnp
import numpy as np

from db_gemm import bench
from jax_fhe.pir import modgemm, ring

PRIMES = ring.RING_N4096.primes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--slots", type=int, default=1024)
    ap.add_argument("--blocks", type=int, default=256)
    ap.add_argument("--k", type=int, default=1280)
    ap.add_argument("--cols", type=int, nargs="+", default=[2, 64])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--bandwidth", type=float, default=2.9e12)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    limbs = len(PRIMES)
    key = jax.random.key(0)
    words = jax.random.bits(key, (a.slots, limbs, a.blocks, a.k), jnp.uint32)
    planes = modgemm.split_planes(words % jnp.asarray(np.array(PRIMES, np.uint32))[None, :, None, None])
    del words
    print(f"device: {jax.devices()[0].device_kind}; planes {planes.nbytes / 2**30:.2f} GiB "
          f"({a.slots} slots x {limbs} limbs x {4 * a.blocks} x {a.k})")
    print(f"{'C':>4} {'path':>6} {'ms':>9} {'floor ms':>9} {'ratio':>6}")
    rows = []
    for c in a.cols:
        rhs = jax.random.bits(jax.random.fold_in(key, c), (a.slots, limbs, a.k, c), jnp.uint32)
        rhs = rhs % jnp.asarray(np.array(PRIMES, np.uint32))[None, :, None, None]
        out_bytes = a.slots * limbs * a.blocks * c * 4
        floor = (planes.nbytes + rhs.nbytes + out_bytes) / a.bandwidth
        fns = {name: jax.jit(lambda p, r, f=f: modgemm.mod_matmul(p, r, PRIMES, 1, fused=f))
               for name, f in (("xla", False), ("fused", True))}
        check = slice(0, min(a.slots, 64))
        ref = np.asarray(fns["xla"](planes[check], rhs[check]))
        got = np.asarray(fns["fused"](planes[check], rhs[check]))
        if not np.array_equal(ref, got):
            raise SystemExit(f"C = {c}: the fused kernel differs from the XLA path")
        for name, fn in fns.items():
            t = bench(fn, (planes, rhs), a.reps)
            rows.append(dict(cols=c, path=name, ms=t * 1e3, floor_ms=floor * 1e3, ratio=t / floor,
                             slots=a.slots, blocks=a.blocks, k=a.k,
                             device=jax.devices()[0].device_kind))
            print(f"{c:>4} {name:>6} {t * 1e3:>9.3f} {floor * 1e3:>9.3f} {t / floor:>6.2f}")
        del rhs
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
