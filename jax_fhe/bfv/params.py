"""BFV parameter sets as data: the modulus chain (:class:`jax_fhe.rlwe.RLWEParams`, one level:
BFV computes at the full modulus Q) plus the plaintext modulus t and the auxiliary basis B of
the multiplication.

* ``plain_modulus`` t: a prime = 1 (mod 2N) below 2^31 and below every prime of the set, so that
  the plaintext ring Z_t[X]/(X^N + 1) splits into N slots (SIMD batching, a 2 x N/2 matrix).
* ``aux_primes`` B: the basis the tensor product of two ciphertexts is computed in before the
  scale-and-round by t/Q (:mod:`jax_fhe.bfv.evaluator`). Its product must exceed 8 t N Q, so
  that the tensor product (coefficients below N Q^2 / 2) times t is exact over Q B and its
  rounded quotient lies within B/4 (where the conversion back to Q is exact). The auxiliary
  primes never hold key material: they do not count in the security bound.
"""
from __future__ import annotations

import dataclasses
import functools
import math

from ..rlwe.params import RLWEParams
from ..rlwe.plainmod import check_plain_modulus
from ..rns.primes import check_ntt_prime


def check_batching_modulus(t: int, params: RLWEParams) -> int:
    """``t`` checked as a plaintext modulus of ``params`` that allows batching: an odd prime
    below 2^31 and below every prime of the set, t = 1 (mod 2N)."""
    t = check_plain_modulus(t, params.all_primes, f"{params.name}: plain_modulus")
    if (t - 1) % (2 * params.n):
        raise ValueError(f"{params.name}: batch encoding needs t = 1 (mod 2N = {2 * params.n}), "
                         f"got t = {t} (t mod 2N = {t % (2 * params.n)})")
    return t


@dataclasses.dataclass(frozen=True)
class BFVParams(RLWEParams):
    """One BFV parameter set: the fields of :class:`jax_fhe.rlwe.RLWEParams` (log_n, q_primes,
    p_primes, levels, alpha, hamming_weight, sigma, name, insecure, keyswitch) with a single
    level (every q row), and

      plain_modulus: t (prime, = 1 mod 2N, below every prime).
      aux_primes:    the auxiliary basis B of the multiplication (prod > 8 t N Q).
    """

    plain_modulus: int = 65537
    aux_primes: tuple = ()

    def __post_init__(self):
        super().__post_init__()
        if len(self.levels) != 1 or tuple(self.levels[0]) != tuple(range(self.num_q)):
            raise ValueError(f"{self.name}: BFV computes at the full modulus: levels must be "
                             f"((0, ..., {self.num_q - 1}),)")
        check_batching_modulus(self.plain_modulus, self)
        aux = tuple(self.aux_primes)
        if not aux:
            raise ValueError(f"{self.name}: aux_primes (the multiplication's auxiliary basis) is empty")
        if len(set(aux)) != len(aux) or set(aux) & set(self.all_primes):
            raise ValueError(f"{self.name}: aux_primes must be distinct and differ from q_primes and p_primes")
        for b in aux:
            check_ntt_prime(b, self.n)
        if int(self.plain_modulus) >= min(aux):
            raise ValueError(f"{self.name}: the plaintext modulus must be below every auxiliary prime")
        need = self.aux_bits_needed
        if math.log2(math.prod(aux)) < need:
            raise ValueError(f"{self.name}: the auxiliary basis has {math.log2(math.prod(aux)):.1f} bits; "
                             f"the multiplication needs log2(8 t N Q) = {need:.1f}")

    @property
    def t(self) -> int:
        """The plaintext modulus t."""
        return int(self.plain_modulus)

    @property
    def slots(self) -> int:
        """N: the slots of a plaintext (a 2 x N/2 matrix)."""
        return self.n

    @functools.cached_property
    def log_q(self) -> float:
        """log2(Q): the size of the ciphertext modulus in bits."""
        return math.log2(self.modulus(0))

    @property
    def aux_bits_needed(self) -> float:
        """log2(8 t N Q): the least size of the auxiliary basis."""
        return 3 + math.log2(self.plain_modulus) + self.log_n + self.log_q

    @functools.cached_property
    def max_depth(self) -> int:
        """Multiplicative depth the analytic noise bound allows (:mod:`jax_fhe.bfv.noise`):
        squarings, each relinearized, of a fresh public-key encryption."""
        from .noise import max_depth
        return max_depth(self)

    def __repr__(self) -> str:
        tag = ", INSECURE: test only" if self.insecure else ""
        secret = "ternary" if self.hamming_weight is None else f"h={self.hamming_weight}"
        return (f"BFVParams({self.name!r}, N=2^{self.log_n}, t={self.plain_modulus}, "
                f"q={self.num_q} primes (log2 Q={self.log_q:.1f}), p={len(self.p_primes)} primes, "
                f"dnum={self.dnum}, aux={len(self.aux_primes)} primes, log2(PQ)={self.log_pq:.1f}, {secret}{tag})")
