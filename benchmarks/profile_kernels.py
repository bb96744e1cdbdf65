"""Run one kernel configuration once (after a small warm-up), for Nsight Compute:

    ncu -k regex:'ntt_|bconv_' --launch-count 2 python benchmarks/profile_kernels.py ntt
    python benchmarks/profile_kernels.py {ntt,intt,lift,bconv30,bconv31} [--limbs 48] [--batch 16]
        [--log-n 16]
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

from jax_fhe import ops, rns

ap = argparse.ArgumentParser()
ap.add_argument("op", choices=["ntt", "intt", "lift", "bconv30", "bconv31"])
ap.add_argument("--limbs", type=int, default=48)
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--log-n", type=int, default=16)
args = ap.parse_args()
rng = np.random.default_rng(0)
N = 1 << args.log_n

if args.op == "lift":  # gadget digits in [-2^17, 2^17) lifted to every limb inside the NTT
    ctx = rns.make_context(rns.ntt_primes(30, args.limbs, N), N)
    f = jax.jit(lambda x: ops.ntt_lift(x, ctx))
    x = jnp.asarray(rng.integers(-(1 << 17), 1 << 17, (args.batch, N), dtype=np.int64).astype(np.int32))
else:
    if args.op in ("ntt", "intt"):
        src = rns.ntt_primes(30, args.limbs, N)
        ctx = rns.make_context(src, N)
        f = jax.jit(lambda x: (ops.ntt if args.op == "ntt" else ops.intt)(x, ctx))
    else:
        width = int(args.op[-2:])
        src = rns.ntt_primes(width, 12, N)
        table = rns.make_bconv_table(src, rns.ntt_primes(width, args.limbs, N, exclude=src))
        f = jax.jit(lambda x: ops.bconv(x, table))
    q = np.array(src, dtype=np.uint64)[:, None]
    x = jnp.asarray((rng.integers(0, 2**62, (args.batch, len(src), N), dtype=np.uint64) % q).astype(np.uint32))
jax.block_until_ready(f(x))
print("done", args.op)
