"""Run one kernel configuration once (after a small warm-up), for Nsight Compute:

    ncu -k regex:'ntt_|bconv_' --launch-count 2 python tools/profile_kernels.py ntt
    python tools/profile_kernels.py {ntt,intt,lift,bconv30,bconv31} [--limbs 48] [--batch 16]
        [--log-n 16]
    python tools/profile_kernels.py keyswitch --limbs 48 --batch 1   # one (48, 12, 4) key
        switch (profile with --launch-skip set to the kernels of one call to skip the warm-up)
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

from jax_fhe import ops, rlwe, rns
from jax_fhe.rns import HostRandom

ap = argparse.ArgumentParser()
ap.add_argument("op", choices=["ntt", "intt", "lift", "bconv30", "bconv31", "keyswitch"])
ap.add_argument("--limbs", type=int, default=48)
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--log-n", type=int, default=16)
args = ap.parse_args()
rng = np.random.default_rng(0)
N = 1 << args.log_n

if args.op == "keyswitch":  # hybrid key switch at (L, 12, L / 12), batch entries vmapped
    # keys and tables are made on the CPU, so that the only jax_fhe kernels on the GPU are the
    # key switch's (ncu --launch-count: the kernels of one call)
    gpu = jax.devices()[0]
    with jax.default_device(jax.devices("cpu")[0]):
        qs = rns.ntt_primes(30, args.limbs, N)
        ps = rns.ntt_primes(31, 12, N, exclude=qs)
        primes = qs + ps
        ring = rns.make_context(primes, N)
        tables = rlwe.make_hybrid_tables(primes, tuple(range(args.limbs)),
                                         tuple(range(args.limbs, args.limbs + 12)), 12)
        r = HostRandom.insecure_deterministic(1)  # profiling data only
        s = ops.ntt(jnp.asarray(rns.to_residues(r.ternary((2, N)), primes)), ring)
        key = rlwe.gen_switching_key(ring, s[0], s[1], num_q=args.limbs, alpha=12, sigma=3.2, rng=r)
    ring, tables, key = jax.device_put((ring, tables, key), gpu)
    ks = jax.jit(rlwe.key_switch) if args.batch == 1 else \
        jax.jit(jax.vmap(rlwe.key_switch, in_axes=(0, None, None, None)))
    x = jnp.asarray(r.uniform_mod(qs, N if args.batch == 1 else (args.batch, N)))
    if args.batch > 1:
        x = jnp.moveaxis(x, 0, 1)
    x = jax.device_put(x, gpu)
    f = lambda x: ks(x, key, ring, tables)  # noqa: E731 (the tables are arguments, not constants)
elif args.op == "lift":  # gadget digits in [-2^17, 2^17) lifted to every limb inside the NTT
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
