"""Time the PIR DB GEMM (int8 DB x uint32 queries mod 2^32) and compare with its floors.

    python benchmarks/db_gemm.py --log-rows 15 --log-cols 15 --batches 1 8 32 --json out.json

Floors: reading the DB once (M * K bytes over --bandwidth, default 3.0e12 B/s, the measured
H100 copy rate) and the int8 tensor-core work (4 planes * 2 * M * K * B ops over --int8-ops,
default 890e12/s). The reported ratio is measured time over the larger floor.
"""
from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from jax_fhe.pir import db_gemm


def bench(fn, args, reps):
    jax.block_until_ready(fn(*args))  # compile + warm up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log-rows", type=int, default=12)
    ap.add_argument("--log-cols", type=int, default=12)  # >= 2
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--bandwidth", type=float, default=3.0e12)
    ap.add_argument("--int8-ops", type=float, default=890e12)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    m, k = 1 << a.log_rows, 1 << a.log_cols
    key = jax.random.key(0)
    # Random bytes (never zeros), drawn as uint32 words so no 4x-sized temporary is needed.
    words = jax.random.bits(key, (m, k // 4), jnp.uint32)
    db = jax.lax.bitcast_convert_type(words, jnp.int8).reshape(m, k)
    del words
    rows = []
    print(f"device: {jax.devices()[0].device_kind}; DB {m} x {k} = {m * k / 2**30:.3f} GiB")
    print(f"{'B':>4} {'method':>6} {'ms':>9} {'floor ms':>9} {'ratio':>6}")
    for b in a.batches:
        q = jax.random.bits(jax.random.fold_in(key, b), (k, b), jnp.uint32)
        for method in (("gemv", "gemm") if b == 1 else ("gemm",)):
            fn = jax.jit(lambda d, x, method=method: db_gemm(d, x, method=method))
            t = bench(fn, (db, q), a.reps)
            floor = max(m * k / a.bandwidth, 8 * m * k * b / a.int8_ops)
            rows.append(dict(batch=b, method=method, ms=t * 1e3, floor_ms=floor * 1e3, ratio=t / floor))
            print(f"{b:>4} {method:>6} {t * 1e3:>9.3f} {floor * 1e3:>9.3f} {t / floor:>6.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(device=jax.devices()[0].device_kind, rows_db=m, cols_db=k, results=rows), f, indent=1)


if __name__ == "__main__":
    main()
