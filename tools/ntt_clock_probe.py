"""On the device machine: run the N = 2^16, L = 48 NTT (or INTT) back to back for a few seconds,
for sampling the SM clock and power with nvidia-smi alongside (tools/ntt_clock_probe.sh).
    python3 tools/ntt_clock_probe.py [ntt|intt] [batch] [seconds]"""
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jax_fhe import ops, rns

name = sys.argv[1] if len(sys.argv) > 1 else "ntt"
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 16
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 4.0
N, L = 1 << 16, 48
primes = rns.ntt_primes(30, L, N)
ctx = jax.device_put(rns.make_context(primes, N))
q = np.array(primes, dtype=np.uint64)[:, None]
x = jnp.asarray((np.random.default_rng(1).integers(0, 2**63, (batch, L, N), dtype=np.uint64) % q).astype(np.uint32))
f = jax.jit(lambda a: getattr(ops, name)(a, ctx))
f(x).block_until_ready()
t0, calls = time.perf_counter(), 0
while time.perf_counter() - t0 < seconds:
    for _ in range(50):
        y = f(x)
    y.block_until_ready()
    calls += 50
dt = time.perf_counter() - t0
print(f"{name} B={batch}: {calls} calls, {dt / calls * 1e6:.1f} us per call (wall, back to back)")
