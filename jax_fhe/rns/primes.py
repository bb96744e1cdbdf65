"""NTT-friendly primes for 32-bit RNS words, with exact Python integers.

Every prime used by jax_fhe is below 2^31 (so 2q fits in a uint32 word) and satisfies
q = 1 (mod 2N), which gives the primitive 2N-th roots of unity the negacyclic NTT needs.
Further congruences (e.g. q = 1 mod 2^18 for a PIR plaintext modulus) are requested with
``congruent_to``.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

MAX_PRIME_BITS = 31
MAX_PRIME = 1 << MAX_PRIME_BITS

# Deterministic Miller-Rabin: these bases are exact for every n < 3.3e24 (> 2^64).
_MR_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)


def is_prime(n: int) -> bool:
    """Exact primality for n < 2^64 (deterministic Miller-Rabin)."""
    n = int(n)
    if n < 2:
        return False
    for p in _MR_BASES:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in _MR_BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def check_ntt_prime(q: int, n: int) -> None:
    """Raise ValueError unless q is a prime below 2^31 with q = 1 (mod 2n)."""
    q, n = int(q), int(n)
    if not (2 < q < MAX_PRIME):
        raise ValueError(f"modulus {q} is out of range: jax_fhe moduli must be odd primes below 2^31")
    if not is_prime(q):
        raise ValueError(f"modulus {q} is not prime")
    if (q - 1) % (2 * n) != 0:
        raise ValueError(
            f"prime {q} is not NTT-friendly for N={n}: need q = 1 (mod 2N = {2 * n}), "
            f"but q mod 2N = {q % (2 * n)}")


def ntt_primes(bits: int, count: int, n: int, *, congruent_to: int = 1,
               exclude: Iterable[int] = (), descending: bool = True) -> tuple[int, ...]:
    """``count`` distinct primes q < 2^bits, q = 1 (mod lcm(2n, congruent_to)).

    Searches downward from 2^bits (or upward from 2^(bits-1) with ``descending=False``), so
    the primes have exactly ``bits`` bits. ``exclude`` skips primes already in use.
    """
    if not 2 <= bits <= MAX_PRIME_BITS:
        raise ValueError(f"bits={bits}: jax_fhe primes have at most {MAX_PRIME_BITS} bits")
    if count < 0:
        raise ValueError("count must be non-negative")
    step = math.lcm(2 * int(n), int(congruent_to))
    skip = {int(p) for p in exclude}
    lo, hi = 1 << (bits - 1), 1 << bits
    out: list[int] = []
    if descending:
        q = ((hi - 2) // step) * step + 1
        cand = range(q, lo, -step)
    else:
        q = ((lo + step - 1) // step) * step + 1
        cand = range(q, hi, step)
    for q in cand:
        if q not in skip and is_prime(q):
            out.append(q)
            if len(out) == count:
                return tuple(out)
    raise ValueError(f"only {len(out)} primes of {bits} bits are = 1 mod {step}; asked for {count}")


def primitive_root_of_unity(order: int, q: int) -> int:
    """The smallest primitive ``order``-th root of unity mod prime q (order | q - 1)."""
    order, q = int(order), int(q)
    if (q - 1) % order != 0:
        raise ValueError(f"{order} does not divide q - 1 for q = {q}")
    factors = _prime_factors(order)
    cofactor = (q - 1) // order
    for g in range(2, q):
        w = pow(g, cofactor, q)
        if all(pow(w, order // f, q) != 1 for f in factors):
            return w
    raise ValueError(f"no primitive {order}-th root of unity mod {q}")


def _prime_factors(m: int) -> list[int]:
    out, f = [], 2
    while f * f <= m:
        if m % f == 0:
            out.append(f)
            while m % f == 0:
                m //= f
        f += 1
    if m > 1:
        out.append(m)
    return out
