"""BGV parameter sets as data: the modulus chain (:class:`jax_fhe.rlwe.RLWEParams`) plus the
plaintext modulus t.

Levels are nested: going down from level l drops the primes ``dropped(l)`` (at most 16; one or
two in the presets) and adds none. Modulus switching divides by their product D with the
t-correction (:mod:`jax_fhe.rlwe.plainmod`), which multiplies the message by D^-1 mod t: a
ciphertext carries that as its ``factor`` (:class:`jax_fhe.bgv.Ciphertext`).
"""
from __future__ import annotations

import dataclasses
import functools
import math

from ..bfv.params import check_batching_modulus
from ..rlwe.params import RLWEParams
from ..rns.crt import MAX_TERMS


@dataclasses.dataclass(frozen=True)
class BGVParams(RLWEParams):
    """One BGV parameter set: the fields of :class:`jax_fhe.rlwe.RLWEParams` (log_n, q_primes,
    p_primes, levels, alpha, hamming_weight, sigma, name, insecure, keyswitch) and

      plain_modulus: t (prime, = 1 mod 2N, below every prime).
    """

    plain_modulus: int = 65537

    def __post_init__(self):
        super().__post_init__()
        check_batching_modulus(self.plain_modulus, self)
        for l in range(1, len(self.levels)):
            if self.added(l):
                raise ValueError(f"{self.name}: BGV levels must be nested (level {l - 1} adds primes "
                                 f"{self.added(l)} to level {l}'s)")
            if len(self.dropped(l)) > MAX_TERMS:
                raise ValueError(f"{self.name}: going down from level {l} drops {len(self.dropped(l))} primes; "
                                 f"at most {MAX_TERMS}")

    @property
    def t(self) -> int:
        """The plaintext modulus t."""
        return int(self.plain_modulus)

    @property
    def slots(self) -> int:
        """N: the slots of a plaintext (a 2 x N/2 matrix)."""
        return self.n

    def log_q(self, level: int) -> float:
        """log2(Q_level): the ciphertext modulus at ``level`` in bits."""
        return math.log2(self.modulus(level))

    @functools.cached_property
    def max_depth(self) -> int:
        """Multiplicative depth the analytic noise bound allows (:mod:`jax_fhe.bgv.noise`):
        squarings of a fresh public-key encryption at the top level, each relinearized and
        followed by a modulus switch while a level remains."""
        from .noise import max_depth
        return max_depth(self)

    def __repr__(self) -> str:
        tag = ", INSECURE: test only" if self.insecure else ""
        secret = "ternary" if self.hamming_weight is None else f"h={self.hamming_weight}"
        return (f"BGVParams({self.name!r}, N=2^{self.log_n}, t={self.plain_modulus}, levels={self.max_level}, "
                f"q={self.num_q} primes (log2 Q={self.log_q(self.max_level):.1f}), p={len(self.p_primes)} primes, "
                f"dnum={self.dnum}, log2(PQ)={self.log_pq:.1f}, {secret}{tag})")
