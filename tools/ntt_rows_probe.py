"""Device time of the N = 2^16 NTT / INTT at L = 48, batch 16, with every limb on its own prime
(48 twiddle tables) against limbs alternating between two primes (two tables, hot in L2): the
difference is what reading the tables from HBM costs the cluster kernel's reloads. On the device
machine: bash scripts/gpu_prebuilt.sh python3 tools/ntt_rows_probe.py"""
import sys
import tempfile

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, "benchmarks")
from gpu_trace import trace_kernels  # noqa: E402

from jax_fhe import ops, rns  # noqa: E402

N, L, B, K = 1 << 16, 48, 16, 8
primes = rns.ntt_primes(30, L, N)
ctx = jax.device_put(rns.make_context(primes, N), jax.devices("gpu")[0])
rng = np.random.default_rng(1)
for name, rows in (("48 rows", tuple(range(L))), ("2 rows", (0, 1) * (L // 2)),
                   ("48 rows", tuple(range(L))), ("2 rows", (0, 1) * (L // 2))):
    q = np.asarray([primes[r] for r in rows], np.uint64)[None, :, None]
    xs = [jnp.asarray((rng.integers(0, 1 << 62, size=(B, L, N), dtype=np.uint64) % q).astype(np.uint32))
          for _ in range(K)]
    for op in ("ntt", "intt"):
        fn = getattr(ops, op)
        f = jax.jit(lambda c, *v: [fn(u, c, rows=rows) for u in v])
        jax.block_until_ready(f(ctx, *xs))
        tot = trace_kernels(lambda *a: f(ctx, *a), xs, tempfile.mkdtemp(prefix="rows_probe_"))
        per = {k.split("<")[0].split("::")[-1]: v[0] / v[1] for k, v in tot.items() if "ntt" in k}
        print(f"{op:5s} {name}: {tot.busy / K:7.1f} us per transform "
              + " ".join(f"{k} {v:.1f}" for k, v in sorted(per.items())), flush=True)
