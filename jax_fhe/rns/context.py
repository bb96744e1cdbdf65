"""RNS contexts: the per-prime tables every kernel takes as arguments.

An :class:`RNSContext` is a pytree holding, for an ordered list of T primes and a ring degree
N, the device arrays the kernels need (twiddles, Shoup companions, N^-1, Montgomery
constants). Pass it into jitted functions as an argument; never close over it (closing over it
would embed the tables as constants in the compiled program).

Data polynomials are ``uint32[..., L, N]`` with canonical residues in [0, q). By default limb i
of the data uses prime i of the context; ``rows`` selects other primes (e.g. the primes of one
CKKS level, or the complement of a key-switching digit) without copying tables.
"""
from __future__ import annotations

from collections.abc import Sequence

import jax
import numpy as np

from .pytree import pytree_dataclass, static_field
from .primes import check_ntt_prime, primitive_root_of_unity
from .shoup import bit_reverse_permutation, device_u32, powers_mod, shoup

MIN_LOG_N = 10
MAX_LOG_N = 16


def check_ring_degree(n: int) -> int:
    """Return log2(n), or raise TypeError unless n is an integer and ValueError unless it is a
    power of two in [2^10, 2^16]."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"ring degree N must be an int, got {type(n).__name__} {n!r}")
    n = int(n)
    if n <= 0 or n & (n - 1):
        raise ValueError(f"ring degree N={n} must be a power of two")
    log_n = n.bit_length() - 1
    if not MIN_LOG_N <= log_n <= MAX_LOG_N:
        raise ValueError(f"ring degree N=2^{log_n} is out of range [2^{MIN_LOG_N}, 2^{MAX_LOG_N}]")
    return log_n


@pytree_dataclass
class RNSContext:
    """Tables for primes ``primes`` (length T) and ring degree ``n``.

    Array fields (leaves):
      moduli:      uint32[T]     the primes q_t
      neg_qinv:    uint32[T]     -q^-1 mod 2^32 (Montgomery reduction)
      r2:          uint32[T]     2^64 mod q (leaves Montgomery form after a Montgomery product)
      psi:         uint32[T, N]  psi^brev(k): forward twiddles (psi a primitive 2N-th root)
      psi_shoup:   uint32[T, N]
      ipsi:        uint32[T, N]  psi^-brev(k): inverse twiddles
      ipsi_shoup:  uint32[T, N]
      n_inv:       uint32[T]     N^-1 mod q
      n_inv_shoup: uint32[T]
    Static: ``primes`` (tuple of ints), ``n``.
    """

    moduli: jax.Array
    neg_qinv: jax.Array
    r2: jax.Array
    psi: jax.Array
    psi_shoup: jax.Array
    ipsi: jax.Array
    ipsi_shoup: jax.Array
    n_inv: jax.Array
    n_inv_shoup: jax.Array
    primes: tuple = static_field()
    n: int = static_field()

    @property
    def log_n(self) -> int:
        """log2 N."""
        return self.n.bit_length() - 1

    def __repr__(self) -> str:
        bits = sum(int(q).bit_length() for q in self.primes)
        return f"RNSContext(N={self.n}, T={len(self.primes)} primes, ~{bits} bits)"

    def rows_for(self, limbs: int, rows: Sequence[int] | None = None) -> tuple[int, ...]:
        """Validate and return the table rows used by data with ``limbs`` limbs."""
        if rows is None:
            if limbs > len(self.primes):
                raise ValueError(
                    f"data has {limbs} limbs but the context holds only {len(self.primes)} primes")
            return tuple(range(limbs))
        rows = tuple(int(r) for r in rows)
        if len(rows) != limbs:
            raise ValueError(f"rows has {len(rows)} entries but the data has {limbs} limbs")
        for r in rows:
            if not 0 <= r < len(self.primes):
                raise ValueError(f"row {r} is out of range for a context of {len(self.primes)} primes")
        return rows

    def primes_for(self, rows: Sequence[int]) -> tuple[int, ...]:
        """The primes of table rows ``rows``."""
        return tuple(self.primes[r] for r in rows)


def make_context(primes: Sequence[int], n: int) -> RNSContext:
    """Build the tables for ``primes`` (each NTT-friendly for ``n``) on the default device."""
    check_ring_degree(n)
    n = int(n)
    primes = tuple(int(q) for q in primes)
    if not primes:
        raise ValueError("an RNS context needs at least one prime")
    if len(set(primes)) != len(primes):
        raise ValueError("RNS primes must be distinct")
    for q in primes:
        check_ntt_prime(q, n)
    brev = bit_reverse_permutation(n)
    cols = {k: [] for k in ("psi", "psi_shoup", "ipsi", "ipsi_shoup")}
    n_inv, neg_qinv, r2 = [], [], []
    for q in primes:
        psi = primitive_root_of_unity(2 * n, q)
        fwd = powers_mod(psi, n, q)[brev]
        inv = powers_mod(pow(psi, -1, q), n, q)[brev]
        cols["psi"].append(fwd.astype(np.uint32))
        cols["psi_shoup"].append(shoup(fwd, q))
        cols["ipsi"].append(inv.astype(np.uint32))
        cols["ipsi_shoup"].append(shoup(inv, q))
        n_inv.append(pow(n, -1, q))
        neg_qinv.append((-pow(q, -1, 1 << 32)) % (1 << 32))
        r2.append((1 << 64) % q)
    tabs = {k: np.stack(v) for k, v in cols.items()}  # uint32[T, N] each
    return RNSContext(
        moduli=device_u32(primes),
        neg_qinv=device_u32(neg_qinv),
        r2=device_u32(r2),
        psi=device_u32(tabs["psi"]),
        psi_shoup=device_u32(tabs["psi_shoup"]),
        ipsi=device_u32(tabs["ipsi"]),
        ipsi_shoup=device_u32(tabs["ipsi_shoup"]),
        n_inv=device_u32(n_inv),
        n_inv_shoup=device_u32(shoup(n_inv, primes)),
        primes=primes,
        n=int(n),
    )
