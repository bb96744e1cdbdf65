"""CKKS parameter sets as data: the prime chain, the level plan and the derived scale table.

A parameter set is a frozen, hashable dataclass (usable as static pytree metadata). Its pieces:

* ``q_primes``: the *global* list of ciphertext primes, in row order. Row r of every table and
  key is prime ``q_primes[r]``; the special (key-switching) primes ``p_primes`` follow as rows
  ``len(q_primes) ...``.
* ``levels``: level l (0 = lowest) is a sorted tuple of rows of ``q_primes``. Ciphertext data at
  level l is ``uint32[..., 2, len(levels[l]), N]`` whose limb i uses row ``levels[l][i]``.
  Levels need not be nested: rescaling from level l to l - 1 *drops* the set
  D = levels[l] minus levels[l-1] and *adds* the set R = levels[l-1] minus levels[l], dividing
  the scale by the rational number rho_l = prod(D) / prod(R) (Cheddar's rational rescaling,
  notes/ckks-32bit-design.md §1.5). One prime dropped and none added is the classical chain.
* the scale table: s_0 = 2^log_scale and s_l = sqrt(s_{l-1} * rho_l), so that the product of
  two ciphertexts at level l and scale s_l rescales exactly onto s_{l-1}.
* hybrid key switching: digits of ``alpha`` consecutive *global* rows (digit d = rows
  [d alpha, (d+1) alpha)), dnum = ceil(len(q_primes) / alpha); ``len(p_primes)`` special primes.

Construction checks primes (distinct, NTT-friendly, < 2^31), the level plan, and security: the
total log2(PQ) over all primes must be within the Homomorphic Encryption Standard's 128-bit
bound for ternary secrets, unless ``insecure=True`` (then the repr says INSECURE).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction

from ..rns.context import check_ring_degree
from ..rns.primes import check_ntt_prime

#: HE Standard (2018), 128-bit classical security, ternary secret: max log2(PQ) per log2(N).
HE_STD_128_TERNARY = {10: 27, 11: 54, 12: 109, 13: 218, 14: 438, 15: 881, 16: 1772}


@dataclasses.dataclass(frozen=True)
class CKKSParams:
    """One CKKS parameter set (see the module docstring for the meaning of each field).

    Fields:
      log_n:            ring degree N = 2^log_n (10..16); N/2 complex slots.
      q_primes:         global ciphertext primes (row order).
      p_primes:         special primes for hybrid key switching (alpha of them).
      levels:           level l -> sorted tuple of rows of q_primes.
      log_scale:        log2 of the default scale at level 0.
      alpha:            primes per key-switching digit (on the global row index).
      encryption_level: default level of fresh encryptions (None: the top level).
      hamming_weight:   secret with exactly this many +-1 entries; None: uniform ternary.
      sigma:            standard deviation of the discrete Gaussian noise (truncated at 6 sigma).
      name:             label for reprs and error messages.
      insecure:         required for sets above the 128-bit bound; the repr then says INSECURE.
    """

    log_n: int
    q_primes: tuple
    p_primes: tuple
    levels: tuple
    log_scale: float = 40.0
    alpha: int = 1
    encryption_level: int | None = None
    hamming_weight: int | None = None
    sigma: float = 3.2
    name: str = "custom"
    insecure: bool = False

    def __post_init__(self):
        n = 1 << int(self.log_n)
        check_ring_degree(n)
        qs, ps = tuple(self.q_primes), tuple(self.p_primes)
        if not qs:
            raise ValueError(f"{self.name}: q_primes is empty")
        if len(set(qs + ps)) != len(qs) + len(ps):
            raise ValueError(f"{self.name}: all primes (q and p) must be distinct")
        for q in qs + ps:
            check_ntt_prime(q, n)
        if not self.levels:
            raise ValueError(f"{self.name}: the level plan is empty")
        for l, rows in enumerate(self.levels):
            if not rows or tuple(sorted(set(rows))) != tuple(rows):
                raise ValueError(f"{self.name}: level {l} must be a non-empty sorted tuple of distinct rows")
            if rows[0] < 0 or rows[-1] >= len(qs):
                raise ValueError(f"{self.name}: level {l} uses a row outside q_primes (0..{len(qs) - 1})")
        for l in range(1, len(self.levels)):
            if not set(self.levels[l]) - set(self.levels[l - 1]):
                raise ValueError(f"{self.name}: rescaling from level {l} drops no prime")
            if self.ratio(l) <= 1:
                raise ValueError(f"{self.name}: rescaling from level {l} does not divide the modulus")
        if not 1 <= self.alpha <= len(qs):
            raise ValueError(f"{self.name}: alpha={self.alpha} must be in [1, {len(qs)}]")
        if not ps:
            raise ValueError(f"{self.name}: hybrid key switching needs at least one special prime")
        if self.encryption_level is not None and not 0 <= self.encryption_level <= self.max_level:
            raise ValueError(f"{self.name}: encryption_level {self.encryption_level} is not a level")
        if self.hamming_weight is not None and not 0 < self.hamming_weight <= n:
            raise ValueError(f"{self.name}: hamming_weight must be in (0, N]")
        if self.sigma <= 0:
            raise ValueError(f"{self.name}: sigma must be positive")
        bound = HE_STD_128_TERNARY[int(self.log_n)]
        if self.log_pq > bound and not self.insecure:
            raise ValueError(
                f"{self.name}: log2(PQ) = {self.log_pq:.1f} exceeds the HE-standard 128-bit bound "
                f"{bound} for N = 2^{self.log_n} with ternary secrets; pass insecure=True for a "
                "test-only set")

    # -- sizes -------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return 1 << int(self.log_n)

    @property
    def slots(self) -> int:
        """Full number of complex slots, N/2."""
        return self.n // 2

    @property
    def max_level(self) -> int:
        return len(self.levels) - 1

    @property
    def default_level(self) -> int:
        """The level fresh encryptions use by default."""
        return self.max_level if self.encryption_level is None else int(self.encryption_level)

    @property
    def num_q(self) -> int:
        return len(self.q_primes)

    @property
    def dnum(self) -> int:
        """Number of key-switching digits over the whole q chain."""
        return -(-self.num_q // self.alpha)

    @property
    def all_primes(self) -> tuple:
        """Rows of the RNS context: q primes then special primes."""
        return tuple(self.q_primes) + tuple(self.p_primes)

    @property
    def special_rows(self) -> tuple:
        return tuple(range(self.num_q, self.num_q + len(self.p_primes)))

    @functools.cached_property
    def log_pq(self) -> float:
        """log2 of the product of every prime (the largest modulus any key lives in)."""
        return math.log2(math.prod(self.all_primes))

    # -- levels --------------------------------------------------------------------------------
    def check_level(self, level: int) -> int:
        if not isinstance(level, int) or not 0 <= level <= self.max_level:
            raise ValueError(f"{self.name}: level {level!r} is not in [0, {self.max_level}]")
        return level

    def rows(self, level: int) -> tuple:
        """Global rows (into q_primes) of the limbs of a ciphertext at ``level``."""
        return tuple(self.levels[self.check_level(level)])

    def primes(self, level: int) -> tuple:
        return tuple(self.q_primes[r] for r in self.rows(level))

    def modulus(self, level: int) -> int:
        return math.prod(self.primes(level))

    def dropped(self, level: int) -> tuple:
        """Rows D removed when rescaling from ``level`` to ``level - 1``."""
        return tuple(sorted(set(self.rows(level)) - set(self.rows(level - 1))))

    def added(self, level: int) -> tuple:
        """Rows R added when rescaling from ``level`` to ``level - 1``."""
        return tuple(sorted(set(self.rows(level - 1)) - set(self.rows(level))))

    def ratio(self, level: int) -> Fraction:
        """rho_l = prod(D) / prod(R): the exact divisor of rescaling from ``level``."""
        d = math.prod(self.q_primes[r] for r in self.dropped(level))
        r = math.prod(self.q_primes[r] for r in self.added(level))
        return Fraction(d, r)

    def is_subset(self, low: int, high: int) -> bool:
        """Whether the rows of level ``low`` are a subset of those of level ``high`` (so a
        ciphertext can go from ``high`` to ``low`` by dropping limbs)."""
        return set(self.rows(low)) <= set(self.rows(high))

    @functools.cached_property
    def log_scales(self) -> tuple:
        """log2 of the default scale s_l of every level (s_l^2 / rho_l = s_{l-1})."""
        out = [float(self.log_scale)]
        for l in range(1, len(self.levels)):
            out.append((out[-1] + _log2_fraction(self.ratio(l))) / 2)
        return tuple(out)

    def default_scale(self, level: int) -> float:
        return 2.0 ** self.log_scales[self.check_level(level)]

    def digits(self, level: int) -> tuple:
        """Key-switching digits at ``level``: ((digit index, rows), ...) for non-empty digits."""
        groups: dict = {}
        for r in self.rows(level):
            groups.setdefault(r // self.alpha, []).append(r)
        return tuple((d, tuple(rs)) for d, rs in sorted(groups.items()))

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
                rho = f"{_log2_fraction(self.ratio(l)):8.3f}"
            else:
                da, rho = "  -", "       -"
            lines.append(f"{l:5d}  {len(self.levels[l]):5d}  {lq:7.2f}  {da:>8s}  {rho}  {self.log_scales[l]:7.3f}")
        return "\n".join(lines)


def _log2_fraction(x: Fraction) -> float:
    return math.log2(x.numerator) - math.log2(x.denominator)
