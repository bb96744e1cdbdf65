"""Multiply two polynomials in Z_q[X]/(X^N + 1) for several primes at once, with the NTT.

Runs on whatever device JAX picks (GPU when available). Checks one coefficient against a
schoolbook computation with Python integers.

    python examples/ntt_polymul.py
"""
import jax
import jax.numpy as jnp
import numpy as np

from jax_fhe import ops, rns

N = 1 << 12
primes = rns.ntt_primes(30, 3, N)          # three 30-bit primes, q = 1 mod 2N
ctx = rns.make_context(primes, N)          # twiddle tables: a pytree of device arrays

rng = np.random.default_rng(0)
q = np.array(primes, dtype=np.uint64)[:, None]
a = (rng.integers(0, 2**62, (3, N), dtype=np.uint64) % q).astype(np.uint32)
b = (rng.integers(0, 2**62, (3, N), dtype=np.uint64) % q).astype(np.uint32)


@jax.jit
def polymul(a, b, ctx):
    """a * b mod (X^N + 1) limb by limb: NTT, pointwise product, inverse NTT."""
    return ops.intt(ops.mul_mod(ops.ntt(a, ctx), ops.ntt(b, ctx), ctx), ctx)


c = np.asarray(polymul(jnp.asarray(a), jnp.asarray(b), ctx))

# check coefficient 5 of limb 0 by schoolbook: c_5 = sum_{i+j=5} a_i b_j - sum_{i+j=N+5} a_i b_j
k, q0 = 5, primes[0]
expect = sum(int(a[0, i]) * int(b[0, (k - i) % N]) * (1 if i <= k else -1) for i in range(N)) % q0
print(f"device: {jax.devices()[0].device_kind}; primes: {primes}")
print(f"c[0][{k}] = {int(c[0, k])} (schoolbook: {expect}) -> {'OK' if int(c[0, k]) == expect else 'MISMATCH'}")
