"""Multiply two polynomials in Z_q[X]/(X^N + 1) for several primes at once, with the NTT.

Runs on whatever device JAX picks (GPU when available). Checks one coefficient against a
schoolbook computation with Python integers and prints OK or MISMATCH.

    python examples/ntt_polymul.py                    # N = 2^12, three 30-bit primes
    python examples/ntt_polymul.py --log-n 16 --limbs 8
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np

from jax_fhe import ops, rns


@jax.jit
def polymul(a, b, ctx):
    """a * b mod (X^N + 1) limb by limb: NTT, pointwise product, inverse NTT."""
    return ops.intt(ops.mul_mod(ops.ntt(a, ctx), ops.ntt(b, ctx), ctx), ctx)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-n", type=int, default=12, help="ring degree N = 2^log_n, 10..16 (default 12)")
    ap.add_argument("--limbs", type=int, default=3, help="number of 30-bit primes (default 3)")
    args = ap.parse_args()

    n = 1 << args.log_n
    primes = rns.ntt_primes(30, args.limbs, n)     # q = 1 mod 2N
    ctx = rns.make_context(primes, n)              # twiddle tables: a pytree of device arrays

    rng = np.random.default_rng(0)
    q = np.array(primes, dtype=np.uint64)[:, None]
    a = (rng.integers(0, 2**62, (args.limbs, n), dtype=np.uint64) % q).astype(np.uint32)
    b = (rng.integers(0, 2**62, (args.limbs, n), dtype=np.uint64) % q).astype(np.uint32)
    c = np.asarray(polymul(jnp.asarray(a), jnp.asarray(b), ctx))

    # coefficient 5 of limb 0 by schoolbook: c_5 = sum_{i+j=5} a_i b_j - sum_{i+j=N+5} a_i b_j
    k, q0 = 5, primes[0]
    expect = sum(int(a[0, i]) * int(b[0, (k - i) % n]) * (1 if i <= k else -1) for i in range(n)) % q0
    print(f"device: {jax.devices()[0].device_kind}; N = 2^{args.log_n}; primes: {primes}")
    print(f"c[0][{k}] = {int(c[0, k])} (schoolbook: {expect}) -> {'OK' if int(c[0, k]) == expect else 'MISMATCH'}")


if __name__ == "__main__":
    main()
