"""Host-side setup costs at n16-boot (device machine): CKKS key generation, the bootstrap's keys,
and one public- and secret-key encryption (wall time of a call, synced). Run under several
packages to compare them (PYTHONPATH=.base python tools/keygen_encrypt_probe.py).

    python tools/keygen_encrypt_probe.py [--preset n16-boot] [--calls 20]
"""
from __future__ import annotations

import argparse
import statistics
import time

import jax
import numpy as np

from jax_fhe import circuits, ckks
from jax_fhe.rns import HostRandom


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--preset", default="n16-boot")
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args()
    params = ckks.preset(args.preset)
    ctx = ckks.make_context(params)
    rng = HostRandom()
    t = time.perf_counter()
    keys = jax.block_until_ready(ckks.keygen(ctx, rng, progress=False))
    t_keys = time.perf_counter() - t
    boot = circuits.make_bootstrapper(ctx, circuits.BootstrapConfig())
    t = time.perf_counter()
    bk = jax.block_until_ready(circuits.gen_bootstrap_keys(ctx, keys.secret, boot, rng, progress=False))
    t_boot = time.perf_counter() - t
    print(f"{jax.__file__.split('/site-packages')[0][-20:]} {ckks.__file__}")
    print(f"keygen {t_keys:.2f} s; bootstrap keys {t_boot:.2f} s ({len(bk.evk.rotations)} rotation keys)")
    z = np.random.default_rng(0).uniform(-1, 1, params.n // 2)
    pt = ckks.encode(z, ctx)
    for name, key in (("public", keys.public), ("secret", keys.secret)):
        jax.block_until_ready(ckks.encrypt(pt, ctx, key).data)
        times = []
        for _ in range(args.calls):
            t = time.perf_counter()
            jax.block_until_ready(ckks.encrypt(pt, ctx, key).data)
            times.append((time.perf_counter() - t) * 1e3)
        print(f"encrypt ({name} key, level {pt.level}): median {statistics.median(times):.2f} ms "
              f"(min {min(times):.2f})")


if __name__ == "__main__":
    main()
