"""BGV noise: the measured noise budget, and the analytic bound every operation is checked
against (the conventions of :mod:`jax_fhe.bfv.noise`).

**Measured.** The phase x of a ciphertext at level l, centered mod Q_l, is E = f m + t e
(f the factor); decryption [E]_t f^-1 is correct exactly while |E|_inf < Q_l / 2, and

    budget = log2(Q_l) - 1 - log2(max |E|).

:func:`noise_budget` computes E with the secret key (device residues, host CRT).

**Analytic bound** (:class:`NoiseModel`). The model tracks V, the mean square of E's
coefficients (log2 of its square root); the bound on max |E| is z sqrt(V) with
z = sqrt(2 ln(2 N / 2^-40)) (conventions of :mod:`jax_fhe.bfv.noise`: u^2 = 1/12, sigma_e the
key noise, V_s the secret's coefficient variance, S its peak max |s(zeta)|^2, and
w = (1 + S) / (1 + N V_s) the peak over the mean):

* fresh, secret key: V = t^2 u^2 + t^2 sigma_e^2.
* fresh, public key (QP, ModDown by P with the t-correction): V = t^2 u^2
  + (1 + t^2) u^2 (1 + N V_s) + t^2 sigma_e^2 (N 2/3 + 1 + N V_s) / P^2.
* add: square roots add (no independence assumed). Plaintext add: + t^2 u^2. Plaintext
  multiply by m': V times sum m'_i^2. Integer c: times c^2.
* multiply: V = 2 N V_1 V_2 w. In the slots (canonical embedding) E_1 E_2 is a product, and
  V(a) = mean_zeta |a(zeta)|^2 / N. Noise made with the secret (the roundings delta_0 +
  delta_1 s of ModDown and modulus switching) has E|E(zeta)|^2 proportional to
  1 + |s(zeta)|^2, so mean_zeta |E_1 E_2|^2 <= w mean |E_1|^2 mean |E_2|^2; 2 covers the square
  (E|g|^4 = 2 (E|g|^2)^2 for a Gaussian slot value g). The rule assumes the noise entering a
  product has that profile: true after a modulus switch that divides the last product's noise
  below the switching noise (every level of the presets does), and within w for up to two
  products in a row at one level (the slot moments of a product of products grow as
  (a + b)! / (a! b!): 6 for two squarings, while w is 7 to 34).
* key switching (relinearization, rotations): + t^2 sum_d N Q_d^2 u^2 sigma_e^2 / P^2
  + (1 + t^2) u^2 (1 + N V_s) (t-noise keys; ModDown's t-corrected rounding delta / P is
  [y]_P / P + u with |u| <= t/2).
* modulus switch dropping D: V / D^2 + (1 + t^2) u^2 (1 + N V_s) (degree 2:
  (1 + N V_s + 2 (N V_s)^2), the rounding delta_2 s^2).
* balancing factors (a, b): the operands' V times a^2 and b^2.
"""
from __future__ import annotations

import math

from ..bfv.noise import TAIL_PROBABILITY, U2, budget_bits, log2_sum, max_abs_centered, secret_peak
from .context import BGVContext, check_context
from .encryption import noise_coeffs


def noise_budget(ct, ctx: BGVContext, sk):
    """The measured noise budget in bits (float, or an array of the batch shape)."""
    ctx = check_context(ctx, "noise_budget")
    res = noise_coeffs(ct, ctx, sk)
    return budget_bits(max_abs_centered(res, ctx.params.primes(ct.level)), ctx.params.log_q(ct.level))


class NoiseModel:
    """The analytic noise bound of a BGV parameter set (module docstring). Every method takes
    and returns log2 of the square root of V."""

    def __init__(self, params, tail_probability: float = TAIL_PROBABILITY, secret_peak: float | None = None):
        self.params = params
        n = params.n
        self.log_n = math.log2(n)
        self.log_t = math.log2(params.plain_modulus)
        vs = 2 / 3 if params.hamming_weight is None else params.hamming_weight / n
        self.log_vs = math.log2(vs)
        self.log_sigma = math.log2(params.sigma)
        self.log_p = math.log2(math.prod(params.p_primes))
        self.z = math.sqrt(2 * math.log(2 * n / tail_probability))
        self.log_phase = math.log2(1 + n * vs)
        if secret_peak is None:
            secret_peak = n * vs * math.log(n / tail_probability)
        self.secret_peak = float(secret_peak)
        self.log_w = math.log2(1 + self.secret_peak) - self.log_phase
        t2 = 2 * self.log_t
        # (1 + t^2) u^2 (1 + N V_s): a t-corrected rounding delta_0 + delta_1 s (log2 std)
        self.rounding = (log2_sum(0.0, t2) + U2 + self.log_phase) / 2

    @classmethod
    def for_key(cls, ctx, sk, tail_probability: float = TAIL_PROBABILITY):
        """The model with the secret key's own peak S = max |s(zeta)|^2."""
        return cls(ctx.params, tail_probability, secret_peak=secret_peak(ctx, sk))

    # -- sizes --------------------------------------------------------------------------------
    def bound(self, est: float) -> float:
        """log2 of the bound on max |E|: z sqrt(V)."""
        return est + math.log2(self.z)

    def budget(self, est: float, level: int) -> float:
        """The budget the bound guarantees at ``level``: log2(Q_l) - 1 - log2(z sqrt(V))."""
        return self.params.log_q(level) - 1 - self.bound(est)

    # -- operations ---------------------------------------------------------------------------
    def fresh(self, public: bool = True) -> float:
        """A fresh encryption at the top level: public-key (default) or secret-key."""
        t2 = 2 * self.log_t
        if not public:
            return log2_sum(t2 + U2, t2 + 2 * self.log_sigma) / 2
        enc = t2 + 2 * self.log_sigma + log2_sum(self.log_n + math.log2(2 / 3), 0.0, self.log_n + self.log_vs)
        return log2_sum(t2 + U2, 2 * self.rounding, enc - 2 * self.log_p) / 2

    def add(self, a: float, b: float) -> float:
        """The sum of two ciphertexts with noise ``a`` and ``b``."""
        return log2_sum(a, b)

    def add_plain(self, a: float) -> float:
        """Adding a plaintext: its rounding error t u joins the noise."""
        return log2_sum(a, self.log_t + U2 / 2)

    def mul_plain(self, a: float, norm2: float) -> float:
        """Multiplication by a plaintext whose centered coefficients have sum of squares ``norm2``."""
        return a + math.log2(max(norm2, 1)) / 2

    def mul_const(self, a: float, c: int) -> float:
        """Multiplication by the integer ``c``."""
        return a + math.log2(max(abs(int(c)), 1))

    def mul(self, a: float, b: float) -> float:
        """The product before relinearization: the secret's peak weights the cross terms."""
        return a + b + (1 + self.log_n + self.log_w) / 2

    def key_switch(self, level: int) -> float:
        """log2 std of one t-corrected key switch's error at ``level``."""
        p = self.params
        terms = [2 * self.log_t + self.log_n + 2 * math.log2(math.prod(p.q_primes[r] for r in rows)) + U2
                 + 2 * self.log_sigma - 2 * self.log_p for _, rows in p.digits(level)]
        return log2_sum(*terms, 2 * self.rounding) / 2

    def relin(self, a: float, level: int) -> float:
        """Relinearization (and, as ``rotate``, a rotation) at ``level``: one t-corrected key switch."""
        return log2_sum(a, self.key_switch(level))

    rotate = relin

    def mod_switch(self, a: float, level: int, degree: int = 1) -> float:
        """From ``level`` to level - 1, for a ciphertext of ``degree`` (2: unrelinearized,
        whose rounding delta_2 s^2 adds 2 (N V_s)^2 times more: E|s(zeta)|^4 = 2 (N V_s)^2)."""
        p = self.params
        d = math.log2(math.prod(p.q_primes[r] for r in p.dropped(level)))
        rnd = self.rounding
        if degree > 1:
            nvs = self.log_n + self.log_vs
            rnd = (2 * rnd + log2_sum(*(math.log2(math.factorial(i)) + i * nvs for i in range(degree + 1)))
                   - self.log_phase) / 2
        return log2_sum(a - d, rnd)


def max_depth(params) -> int:
    """Squarings (relinearized, each followed by a modulus switch while a level remains) of a
    fresh public-key encryption at the top level that the bound allows."""
    model = NoiseModel(params)
    level, e, d = params.max_level, model.fresh(public=True), 0
    while True:
        e2 = model.relin(model.mul(e, e), level)
        if model.budget(e2, level) <= 0:
            return d
        d += 1
        if level > 0:
            e2, level = model.mod_switch(e2, level), level - 1
        e = e2
