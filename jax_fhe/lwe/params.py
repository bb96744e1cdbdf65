"""LWE parameter sets (Regev encryption over Z_{2^32}, as used by VIPIR's scalar-HE folding).

A parameter set is data: a frozen, hashable dataclass, usable as static pytree metadata.
The ciphertext modulus is always q = 2^32 so that every ciphertext operation is native
``uint32`` wraparound arithmetic (no modular reduction anywhere); modulus switching produces
ciphertexts over 2^k for k < 32, which carry their own ``log_q`` (see ``lwe.mod_switch``).
"""
from __future__ import annotations

import dataclasses
import math

# The only configuration whose security we can vouch for: VIPIR (arXiv:2606.11536, §5 and
# App. A) reports 128-bit security from the Lattice Estimator for n = 1280, q = 2^32, uniform
# ternary secret, sigma = 3.2. We cannot run the estimator here, so a set counts as secure
# only if it is at least as hard in every knob: n >= 1280 (harder with n), sigma >= 3.2
# (harder with sigma), with q fixed at 2^32. Anything else must be marked insecure.
SECURE_MIN_N = 1280
SECURE_MIN_SIGMA = 3.2


@dataclasses.dataclass(frozen=True)
class LWEParams:
    """LWE parameters: dimension ``n``, q = 2^32, plaintext modulus p = 2^log_p.

    Fields:
      n:           LWE dimension (length of the secret and of each ``a`` vector).
      log_p:       plaintext modulus p = 2^log_p (1..16); Delta = q / p = 2^(32 - log_p).
      sigma:       standard deviation of the discrete Gaussian noise.
      tail:        noise is truncated to |e| <= floor(tail * sigma) (6 sigma: |e| <= 19).
      name:        a label for reprs and error messages.
      insecure:    must be True for sets below the secure floor (test-only sets); the repr then
                   says INSECURE.
    The secret is uniform ternary {-1, 0, 1}^n (not configurable).
    """

    n: int
    log_p: int = 8
    sigma: float = 3.2
    tail: float = 6.0
    name: str = "custom"
    insecure: bool = False

    log_q = 32  # class constant, not a field: every fresh ciphertext lives mod 2^32

    def __post_init__(self):
        if not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"LWE dimension n must be a positive int, got {self.n!r}")
        if not isinstance(self.log_p, int) or not 1 <= self.log_p <= 16:
            raise ValueError(f"log_p must be an int in [1, 16] (p = 2^log_p), got {self.log_p!r}")
        if not (self.sigma > 0 and self.tail > 0):
            raise ValueError(f"sigma and tail must be positive, got sigma={self.sigma}, tail={self.tail}")
        if self.noise_max >= self.delta // 2:
            raise ValueError(
                f"noise bound {self.noise_max} must be below Delta/2 = {self.delta // 2} for decryption")
        meets_floor = self.n >= SECURE_MIN_N and self.sigma >= SECURE_MIN_SIGMA
        if not meets_floor and not self.insecure:
            raise ValueError(
                f"LWE set n={self.n}, sigma={self.sigma} is below the checked-secure floor "
                f"(n >= {SECURE_MIN_N}, sigma >= {SECURE_MIN_SIGMA} at q = 2^32); "
                "pass insecure=True for a test-only set")

    @property
    def q(self) -> int:
        """The ciphertext modulus q = 2^32."""
        return 1 << self.log_q

    @property
    def p(self) -> int:
        """The plaintext modulus p = 2^log_p."""
        return 1 << self.log_p

    @property
    def delta(self) -> int:
        """Plaintext scale Delta = q / p (2^24 for p = 2^8)."""
        return 1 << (self.log_q - self.log_p)

    @property
    def noise_max(self) -> int:
        """Largest |e| a fresh encryption can have (the truncation point, 19 for 6 * 3.2)."""
        return math.floor(self.tail * self.sigma)

    def __repr__(self) -> str:
        tag = ", INSECURE: test only" if self.insecure else ""
        return (f"LWEParams({self.name!r}, n={self.n}, q=2^{self.log_q}, p=2^{self.log_p}, "
                f"sigma={self.sigma}, |e|<={self.noise_max}{tag})")


#: VIPIR's LWE set: n = 1280, q = 2^32, p = 2^8, Delta = 2^24, sigma = 3.2 clipped at 6 sigma.
LWE_N1280 = LWEParams(n=1280, log_p=8, sigma=3.2, tail=6.0, name="vipir-n1280")

#: Tiny set for unit tests only: n = 64 gives no security at all.
LWE_TOY = LWEParams(n=64, log_p=8, sigma=3.2, tail=6.0, name="toy", insecure=True)

PRESETS = {p.name: p for p in (LWE_N1280, LWE_TOY)}
