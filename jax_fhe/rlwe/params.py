"""The modulus chain shared by every RLWE scheme: primes, levels, special primes, digits.

:class:`RLWEParams` is a frozen, hashable dataclass (usable as static pytree metadata). Schemes
subclass it and add what is theirs (CKKS: the scale; BFV/BGV: the plaintext modulus).

* ``q_primes``: the *global* list of ciphertext primes, in row order. Row r of every table and
  key is prime ``q_primes[r]``; the special (key-switching) primes ``p_primes`` follow as rows
  ``len(q_primes) ...``.
* ``levels``: level l (0 = lowest) is a sorted tuple of rows of ``q_primes``. Ciphertext data at
  level l is ``uint32[..., k, len(levels[l]), N]`` whose limb i uses row ``levels[l][i]``.
  Levels need not be nested: going from level l to l - 1 *drops* the set
  D = levels[l] minus levels[l-1] and *adds* R = levels[l-1] minus levels[l], dividing the
  modulus by the rational number rho_l = prod(D) / prod(R) (Cheddar's rational rescaling).
  One prime dropped and none added is the classical chain.
* key switching: digits of ``alpha`` consecutive *global* rows (digit d = rows
  [d alpha, (d+1) alpha)), dnum = ceil(len(q_primes) / alpha); ``len(p_primes)`` special
  primes; ``keyswitch`` names the method (:mod:`jax_fhe.rlwe.keyswitch`): a registered name
  ("hybrid", "klss", ...) or "auto" (per level, the faster of hybrid and KLSS by the recorded
  measurements of :mod:`jax_fhe.rlwe.selector`); ``keyswitch_options`` holds method-specific
  options as data (e.g. ``{"klss_block": 4}``), stored as a sorted tuple of pairs so that the
  parameter set stays hashable.

Construction checks the primes (distinct, NTT-friendly, < 2^31), the level plan, and security:
log2(PQ) over all primes must be within the Homomorphic Encryption Standard's 128-bit bound for
ternary secrets, unless ``insecure=True`` (then the repr says INSECURE).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction

from ..rns.context import check_ring_degree
from ..rns.primes import check_ntt_prime
from ..rns.security import check_rlwe_security


@dataclasses.dataclass(frozen=True)
class RLWEParams:
    """A ring and its modulus chain (see the module docstring for each field).

    Fields:
      log_n:          ring degree N = 2^log_n (10..16).
      q_primes:       global ciphertext primes (row order).
      p_primes:       special primes for key switching.
      levels:         level l -> sorted tuple of rows of q_primes.
      alpha:          primes per key-switching digit (on the global row index).
      hamming_weight: secret with exactly this many +-1 entries; None: uniform ternary.
      sigma:          standard deviation of the discrete Gaussian noise (truncated at 6 sigma).
      name:           label for reprs and error messages.
      insecure:       required for sets above the 128-bit bound; the repr then says INSECURE.
      keyswitch:      the key-switching method (a name registered in jax_fhe.rlwe.keyswitch,
                      or "auto": per level, the faster of hybrid and KLSS as measured).
      keyswitch_options: method-specific options, a dict or ((name, value), ...) with hashable
                      values (KLSS: klss_block, klss_t_count, klss_t_bits); kept as a sorted tuple.
    """

    log_n: int
    q_primes: tuple
    p_primes: tuple
    levels: tuple
    alpha: int = 1
    hamming_weight: int | None = None
    sigma: float = 3.2
    name: str = "custom"
    insecure: bool = False
    keyswitch: str = "hybrid"
    keyswitch_options: tuple = ()

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
                raise ValueError(f"{self.name}: going down from level {l} drops no prime")
            if self.ratio(l) <= 1:
                raise ValueError(f"{self.name}: going down from level {l} does not divide the modulus")
        if not 1 <= self.alpha <= len(qs):
            raise ValueError(f"{self.name}: alpha={self.alpha} must be in [1, {len(qs)}]")
        if not ps:
            raise ValueError(f"{self.name}: key switching needs at least one special prime")
        if self.hamming_weight is not None and not 0 < self.hamming_weight <= n:
            raise ValueError(f"{self.name}: hamming_weight must be in (0, N]")
        if self.sigma <= 0:
            raise ValueError(f"{self.name}: sigma must be positive")
        if not isinstance(self.keyswitch, str):
            raise TypeError(f"{self.name}: keyswitch must be a method name, got {self.keyswitch!r}")
        object.__setattr__(self, "keyswitch_options", _options_tuple(self.keyswitch_options, self.name))
        from . import keyswitch  # the registry (same layer); imported here: it needs no params
        keyswitch.check_params(self)
        check_rlwe_security(int(self.log_n), self.log_pq, insecure=self.insecure, name=self.name)

    # -- sizes -------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """The ring degree N = 2^log_n."""
        return 1 << int(self.log_n)

    @property
    def max_level(self) -> int:
        """The top level (levels are 0 .. max_level)."""
        return len(self.levels) - 1

    @property
    def num_q(self) -> int:
        """Number of ciphertext primes (q rows)."""
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
        """Rows of the special primes in the RNS context (after the q rows)."""
        return tuple(range(self.num_q, self.num_q + len(self.p_primes)))

    @functools.cached_property
    def log_pq(self) -> float:
        """log2 of the product of every prime (the largest modulus any key lives in)."""
        return math.log2(math.prod(self.all_primes))

    # -- levels --------------------------------------------------------------------------------
    def check_level(self, level: int) -> int:
        """``level`` if it is an int in [0, max_level]; ValueError otherwise."""
        if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= self.max_level:
            raise ValueError(f"{self.name}: level {level!r} is not in [0, {self.max_level}]")
        return level

    def rows(self, level: int) -> tuple:
        """Global rows (into q_primes) of the limbs of a ciphertext at ``level``."""
        return tuple(self.levels[self.check_level(level)])

    def primes(self, level: int) -> tuple:
        """The primes of the limbs of data at ``level``."""
        return tuple(self.q_primes[r] for r in self.rows(level))

    def modulus(self, level: int) -> int:
        """Q_level, the product of ``level``'s primes (an exact integer)."""
        return math.prod(self.primes(level))

    def dropped(self, level: int) -> tuple:
        """Rows D removed going from ``level`` to ``level - 1``."""
        return tuple(sorted(set(self.rows(level)) - set(self.rows(level - 1))))

    def added(self, level: int) -> tuple:
        """Rows R added going from ``level`` to ``level - 1``."""
        return tuple(sorted(set(self.rows(level - 1)) - set(self.rows(level))))

    def ratio(self, level: int) -> Fraction:
        """rho_l = prod(D) / prod(R): the exact divisor going from ``level`` to ``level - 1``."""
        d = math.prod(self.q_primes[r] for r in self.dropped(level))
        r = math.prod(self.q_primes[r] for r in self.added(level))
        return Fraction(d, r)

    def is_subset(self, low: int, high: int) -> bool:
        """Whether the rows of level ``low`` are a subset of those of level ``high`` (so a
        ciphertext can go from ``high`` to ``low`` by dropping limbs)."""
        return set(self.rows(low)) <= set(self.rows(high))

    def digits(self, level: int) -> tuple:
        """Key-switching digits at ``level``: ((digit index, rows), ...) for non-empty digits."""
        return digit_rows(self.rows(level), self.alpha)


def _options_tuple(options, name: str) -> tuple:
    """``options`` (a dict or pairs) as a sorted tuple of (str, hashable) pairs."""
    items = options.items() if isinstance(options, dict) else options
    try:
        pairs = tuple(sorted(((k, v) for k, v in items), key=lambda kv: str(kv[0])))
    except (TypeError, ValueError):
        raise TypeError(f"{name}: keyswitch_options must be a dict or (name, value) pairs, "
                        f"got {options!r}") from None
    for k, v in pairs:
        if not isinstance(k, str):
            raise TypeError(f"{name}: keyswitch option names must be strings, got {k!r}")
        try:
            hash(v)
        except TypeError:
            raise TypeError(f"{name}: keyswitch option {k!r} must be hashable data (an int, a tuple...), "
                            f"got {v!r}") from None
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValueError(f"{name}: keyswitch option given twice in {options!r}")
    return pairs


def digit_rows(rows, alpha: int) -> tuple:
    """((d, rows of digit d), ...) for the non-empty digits of a basis (digit d = global rows
    [d alpha, (d+1) alpha))."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(int(r) // int(alpha), []).append(int(r))
    return tuple((d, tuple(rs)) for d, rs in sorted(groups.items()))


def log2_fraction(x: Fraction) -> float:
    """log2 of a positive fraction (its numerator and denominator may exceed the float range)."""
    return math.log2(x.numerator) - math.log2(x.denominator)
