"""BFV noise: the measured noise budget, and the analytic bound every operation is checked
against.

**Measured.** For a ciphertext with phase x (c0 + c1 s + ...), t x = Q M + E (mod t Q) with
M = m (mod t) and E = [t x]_Q, the centered residue; decryption round(t x / Q) = M (mod t) is
correct exactly while |E|_inf < Q/2. The noise budget is

    budget = log2(Q) - 1 - log2(max |E|)      (bits; decryption is correct while it is > 0)

(SEAL's invariant noise budget, in real-valued bits). :func:`noise_budget` computes E with the
secret key: the residues of t x on the device (jittable), the centered CRT on the host (exact
Python integers).

**Analytic bound** (:class:`NoiseModel`). The model tracks V, the mean square of E's
coefficients (as log2 of its square root, so that sizes up to 2^1000 are fine); the bound on
max |E| is z sqrt(V) with z = sqrt(2 ln(2 N / 2^-40)), the Gaussian tail that N coefficients
exceed with probability below 2^-40. Notation: V_s the variance of a secret coefficient (2/3
uniform ternary, h/N for Hamming weight h), sigma_e the key noise, u^2 = 1/12 the variance of
a rounding error, and the secret's peak S = max |s(zeta)|^2 over the primitive 2N-th roots zeta
(its canonical embedding; mean N V_s). By Parseval, V(a) = mean_zeta |a(zeta)|^2 / N, and a
product is slot-wise in the embedding, which is how the secret's peak enters:

* fresh, secret key: E = t e - [r m]_t: V = t^2 (sigma_e^2 + u^2).
* fresh, public key (QP, then ModDown by P): V = t^2 u^2 (1 + N V_s) + t^2 u^2
  + t^2 sigma_e^2 (N 2/3 + 1 + N V_s) / P^2.
* add: sqrt(V) = sqrt(V_a) + sqrt(V_b) (no independence assumed: also right for a + a).
* plaintext add: sqrt(V) += t u.   Plaintext multiply by m': V *= sum of m'_i^2 (centered).
* multiply: with M = (t x - E)/Q, E_3 = M_1 E_2 + M_2 E_1 + E_1 E_2 / Q + t (rho_0 + rho_1 s
  + rho_2 s^2), |rho| <= 1/2. In slot zeta, M(zeta) = t (c0 + c1 s)(zeta) / Q with c0, c1
  uniform, so E|M(zeta)|^2 = N t^2 u^2 (1 + |s(zeta)|^2) <= N V_M with V_M = t^2 u^2 (1 + S),
  and V(M E) = mean_zeta |M E|^2 / N <= N V_M V(E) whatever E's dependence on s:
  sqrt(V_3) = sqrt(N V_M) (sqrt(V_1) + sqrt(V_2)) (+ the E_1 E_2 / Q term, 2 N V_1 V_2 / Q^2,
  and the rounding t^2 u^2 (1 + N V_s + 2 N^2 V_s^2), with E|s(zeta)|^4 = 2 (N V_s)^2).
  Using the mean 1 + N V_s instead of the peak underestimates: the noise of a product
  concentrates in the slots where |s(zeta)| is large (measured: 0.5 to 1.4 bits per squaring
  more than the mean predicts, at N = 2^10).
* key switching (relinearization, rotations; hybrid): E += t e_ks with
  V_ks = sum_d N (Q_d^2 u^2) sigma_e^2 / P^2 + u^2 (1 + N V_s)
  (the digits' key products divided by P, and ModDown's rounding).

S is a property of the secret key: :meth:`NoiseModel.for_key` measures it (host FFT of s);
without a key the model takes the bound S <= N V_s ln(N / 2^-40) that a ternary secret exceeds
with probability below 2^-40 (|s(zeta)|^2 / (N V_s) is about exponential of mean 1), which is
what a parameter set's ``max_depth`` uses. The remaining heuristics are the usual ones: c0, c1
uniform and independent of E, the coefficients of E close to Gaussian.
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..rns.crt import crt_centered
from .context import BFVContext, check_context
from .encryption import noise_coeffs
from .keys import SecretKey
from .types import Ciphertext

TAIL_PROBABILITY = 2.0 ** -40


def max_abs_centered(residues, primes) -> np.ndarray:
    """max |v| over the last axis of the centered CRT values v of ``residues`` [..., L, N]:
    numpy object array [...] of Python ints."""
    v = crt_centered(np.asarray(residues), primes)
    return np.max(np.abs(v), axis=-1)


def budget_bits(max_abs, log_q: float):
    """log2(Q) - 1 - log2(max |E|) elementwise (inf where E = 0)."""
    f = np.vectorize(lambda v: math.inf if v == 0 else log_q - 1 - math.log2(int(v)), otypes=[float])
    out = f(np.asarray(max_abs, dtype=object))
    return float(out) if out.ndim == 0 else out


def noise_budget(ct: Ciphertext, ctx: BFVContext, sk: SecretKey):
    """The measured noise budget in bits: a float, or an array of the ciphertexts' batch shape
    (positive: decryption is correct). Host-side (exact CRT) after a jittable device part."""
    ctx = check_context(ctx, "noise_budget")
    res = noise_coeffs(ct, ctx, sk)
    return budget_bits(max_abs_centered(res, ctx.params.q_primes), ctx.params.log_q)


def log2_sum(*logs) -> float:
    """log2(sum 2^x) of the finite entries."""
    xs = [x for x in logs if x != -math.inf]
    if not xs:
        return -math.inf
    top = max(xs)
    return top + math.log2(sum(2.0 ** (x - top) for x in xs))


def half_log(v: float) -> float:
    """log2 of the standard deviation of a variance given as log2."""
    return v / 2


U2 = math.log2(1 / 12)  # log2 variance of a rounding error uniform in [-1/2, 1/2]


class NoiseModel:
    """The analytic noise bound of a BFV parameter set (module docstring). Every method takes
    and returns log2 of the standard deviation of the noise E's coefficients."""

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
        # log2 of (1 + N V_s): the variance gain of a polynomial c0 + c1 s over its parts
        self.log_phase = math.log2(1 + n * vs)
        if secret_peak is None:
            secret_peak = n * vs * math.log(n / tail_probability)
        self.secret_peak = float(secret_peak)
        # log2 of 1 + S: the same gain in the secret's largest slot
        self.log_peak = math.log2(1 + self.secret_peak)

    @classmethod
    def for_key(cls, ctx, sk, tail_probability: float = TAIL_PROBABILITY):
        """The model with the secret key's own peak S = max |s(zeta)|^2 (measured on the host)."""
        return cls(ctx.params, tail_probability, secret_peak=secret_peak(ctx, sk))

    # -- sizes --------------------------------------------------------------------------------
    def log_q(self, level: int = 0) -> float:
        """log2 of the ciphertext modulus at ``level``."""
        return math.log2(self.params.modulus(level))

    def bound(self, est: float) -> float:
        """log2 of the bound on max |E|: z sigma."""
        return est + math.log2(self.z)

    def budget(self, est: float, level: int = 0) -> float:
        """The budget the bound guarantees: log2(Q) - 1 - log2(z sigma)."""
        return self.log_q(level) - 1 - self.bound(est)

    # -- operations ---------------------------------------------------------------------------
    def fresh(self, public: bool = True) -> float:
        """A fresh encryption: public-key (default) or secret-key."""
        t2 = 2 * self.log_t
        if not public:
            return half_log(t2 + log2_sum(2 * self.log_sigma, U2))
        enc = 2 * self.log_sigma + log2_sum(self.log_n + math.log2(2 / 3), 0.0, self.log_n + self.log_vs)
        return half_log(t2 + log2_sum(U2 + self.log_phase, U2, enc - 2 * self.log_p))

    def add(self, a: float, b: float) -> float:
        """The sum of two ciphertexts with noise ``a`` and ``b``."""
        return log2_sum(a, b)

    def add_plain(self, a: float) -> float:
        """Adding a plaintext: its rounding error t u joins the noise."""
        return log2_sum(a, self.log_t + U2 / 2)

    def mul_plain(self, a: float, norm2: float) -> float:
        """Multiplication by a plaintext whose centered coefficients have sum of squares norm2."""
        return a + math.log2(max(norm2, 1)) / 2

    def mul_const(self, a: float, c: int) -> float:
        """Multiplication by the integer ``c`` (its centered residue mod t)."""
        t = self.params.plain_modulus
        c = int(c) % t
        c = abs(c - t if c > t // 2 else c)
        return a + math.log2(max(c, 1))

    def key_switch_variance(self, level: int = 0) -> float:
        """log2 of V_ks (the phase error of one key switch, before any factor t)."""
        p = self.params
        terms = [self.log_n + 2 * math.log2(math.prod(p.q_primes[r] for r in rows)) + U2 + 2 * self.log_sigma
                 - 2 * self.log_p for _, rows in p.digits(level)]
        return log2_sum(*terms, U2 + self.log_phase)

    def relin(self, a: float, level: int = 0) -> float:
        """Relinearization (and, as ``rotate``, a rotation): one key switch's error, times t, joins."""
        return log2_sum(a, half_log(2 * self.log_t + self.key_switch_variance(level)))

    rotate = relin

    def mul(self, a: float, b: float, level: int = 0) -> float:
        """The product before relinearization (add :meth:`relin` for the relinearized one)."""
        vm = 2 * self.log_t + U2 + self.log_peak
        cross = self.log_n + vm + 2 * log2_sum(a, b)
        quad = 1 + self.log_n + 2 * a + 2 * b - 2 * self.log_q(level)
        rnd = 2 * self.log_t + U2 + log2_sum(0.0, self.log_n + self.log_vs, 1 + 2 * (self.log_n + self.log_vs))
        return half_log(log2_sum(cross, quad, rnd))


def secret_peak(ctx, sk) -> float:
    """S = max |s(zeta)|^2 over the primitive 2N-th roots of unity zeta, for the secret key
    ``sk`` of a BFV or BGV context (host: the secret's coefficients, one complex FFT)."""
    q0 = ctx.params.q_primes[0]
    c = np.asarray(ops.intt(sk.s[:1], ctx.ring, (0,)))[0].astype(np.int64)
    c = np.where(c > q0 // 2, c - q0, c).astype(np.float64)
    n = c.shape[-1]
    twist = np.exp(1j * np.pi * np.arange(n) / n)       # s(zeta^(2i+1)) = FFT of s_j zeta^j
    return float(np.max(np.abs(np.fft.fft(c * twist)) ** 2))


def plain_norm2(pt_data, t: int) -> float:
    """Sum of squares of the centered coefficients of plaintexts uint32[..., N] (the largest
    over the batch): the factor :meth:`NoiseModel.mul_plain` takes."""
    c = np.asarray(pt_data).astype(np.int64)
    c = np.where(c > t // 2, c - t, c).astype(np.float64)
    return float(np.max(np.sum(c * c, axis=-1)))


def max_depth(params) -> int:
    """Squarings (each relinearized) of a fresh public-key encryption that the bound allows."""
    model = NoiseModel(params)
    e, d = model.fresh(public=True), 0
    while True:
        e2 = model.relin(model.mul(e, e))
        if model.budget(e2) <= 0:
            return d
        e, d = e2, d + 1
