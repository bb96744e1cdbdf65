"""CKKS parameter sets as data: the modulus chain (:class:`jax_fhe.rlwe.RLWEParams`) plus the
scale plan.

The chain (global prime rows, levels as row sets, special primes, digits, the security check)
is the RLWE layer's; CKKS adds the scale table: s_0 = 2^log_scale and s_l = sqrt(s_{l-1} * rho_l),
so that the product of two ciphertexts at level l and scale s_l rescales exactly onto s_{l-1}
(rho_l = prod(D) / prod(R), the rational divisor of going from level l to l - 1; Cheddar's
rational rescaling, notes/ckks-32bit-design.md §1.5; see docs/ckks-parameters.md).
"""
from __future__ import annotations

import dataclasses
import functools
import math

from ..rlwe.params import RLWEParams, log2_fraction
from ..rns.security import HE_STD_128_TERNARY

__all__ = ["CKKSParams", "HE_STD_128_TERNARY"]


@dataclasses.dataclass(frozen=True)
class CKKSParams(RLWEParams):
    """One CKKS parameter set: the fields of :class:`jax_fhe.rlwe.RLWEParams` (log_n, q_primes,
    p_primes, levels, alpha, hamming_weight, sigma, name, insecure, keyswitch) and

      log_scale:        log2 of the default scale at level 0.
      encryption_level: default level of fresh encryptions (None: the top level).
    """

    log_scale: float = 40.0
    encryption_level: int | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.encryption_level is not None and not 0 <= self.encryption_level <= self.max_level:
            raise ValueError(f"{self.name}: encryption_level {self.encryption_level} is not a level")

    @property
    def slots(self) -> int:
        """Full number of complex slots, N/2."""
        return self.n // 2

    @property
    def default_level(self) -> int:
        """The level fresh encryptions use by default."""
        return self.max_level if self.encryption_level is None else int(self.encryption_level)

    @functools.cached_property
    def log_scales(self) -> tuple:
        """log2 of the default scale s_l of every level (s_l^2 / rho_l = s_{l-1})."""
        out = [float(self.log_scale)]
        for l in range(1, len(self.levels)):
            out.append((out[-1] + log2_fraction(self.ratio(l))) / 2)
        return tuple(out)

    def default_scale(self, level: int) -> float:
        """The default scale s_l of ``level`` (2^log_scales[level])."""
        return 2.0 ** self.log_scales[self.check_level(level)]

    def __repr__(self) -> str:
        tag = ", INSECURE: test only" if self.insecure else ""
        secret = "ternary" if self.hamming_weight is None else f"h={self.hamming_weight}"
        return (f"CKKSParams({self.name!r}, N=2^{self.log_n}, levels={self.max_level}, "
                f"q={self.num_q} primes, p={len(self.p_primes)} primes, dnum={self.dnum}, "
                f"log2(PQ)={self.log_pq:.1f}, scale=2^{self.log_scale:g}, {secret}{tag})")

    def describe(self) -> str:
        """A table of the level plan: rows, log2 Q, dropped/added primes, log2 rho, log2 s."""
        lines = [repr(self), "level  limbs  log2 Q   drop/add  log2 rho  log2 s"]
        for l in range(len(self.levels)):
            lq = math.log2(self.modulus(l))
            if l:
                da = f"{len(self.dropped(l))}/{len(self.added(l))}"
                rho = f"{log2_fraction(self.ratio(l)):8.3f}"
            else:
                da, rho = "  -", "       -"
            lines.append(f"{l:5d}  {len(self.levels[l]):5d}  {lq:7.2f}  {da:>8s}  {rho}  {self.log_scales[l]:7.3f}")
        return "\n".join(lines)
