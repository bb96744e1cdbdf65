"""Polynomial evaluation on CKKS ciphertexts, in the Chebyshev or the power basis.

The algorithm is baby-step giant-step with Paterson–Stockmeyer splits at powers of two:

* **split**: p = low + high * T_P with P = 2^k the largest power of two <= deg p. In the
  Chebyshev basis T_{P+i} = 2 T_P T_i - T_{P-i}, so the top coefficients go to ``high``
  doubled (``high[0] = c_P``) and are subtracted from the mirrored low ones; in the power basis
  the coefficients are simply cut. Parity is preserved (P is even), so an even or odd
  polynomial only ever needs the even or odd powers.
* **leaf**: a part of degree < 2^b (b = ceil(m / 2), m = bit length of the degree: the baby
  steps) is sum_i c_i T_i with the constants multiplied *without* a rescale and one rescale
  for the whole sum ("lazy" rescaling).
* **basis**: T_n for n a power of two is 2 T_{n/2}^2 - 1 (x^n = (x^{n/2})^2); otherwise
  n = a + b with a the largest power of two below n and T_n = 2 T_a T_b - T_{a-b}
  (x^n = x^a x^b). T_n then sits ceil(log2 n) levels below the input.

**Levels.** A part of degree d evaluated at output level l needs its powers at level l + 1.
A leaf is used only when all of its powers are available there; otherwise it is split again
(so the "leading" parts are split more finely, as in Lattigo). The whole polynomial of degree
d costs exactly m = ceil(log2(d + 1)) levels; the map of an interval [a, b] != [-1, 1] onto
[-1, 1] costs one more (a constant multiplication), unless the caller folds it into an earlier
step (e.g. CoeffToSlot's constant in bootstrapping).

**Scales** are planned top-down: the caller names the output scale S (default: the output
level's default scale). A giant step high * T_P landing on (l, S) evaluates ``high`` at
(l + 1, S rho_{l+1} / scale(T_P)); a leaf at (l, S) encodes each c_i at scale
S rho_{l+1} / scale(T_i), so every summand has scale S rho_{l+1} before the leaf's rescale.
Every sum is therefore of terms at one scale (to float rounding), and the result's scale is S.
The input should be at (about) its level's default scale: the powers' scales follow
s -> s^2 / rho and drift away from a scale far from rho.

Everything here runs at trace time on static data (the coefficients are Python numbers), so
:func:`evaluate` works under ``jax.jit`` with the ciphertext, context and keys as arguments.
"""
from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from .. import ckks
from ..ckks import CKKSContext, Ciphertext, EvalKeys

__all__ = ["Polynomial", "chebyshev_interpolate", "evaluate"]

_BASES = ("chebyshev", "monomial")


@dataclasses.dataclass(frozen=True)
class Polynomial:
    """A polynomial with static (host) coefficients, hashable.

    coeffs:   c_0, c_1, ..., c_d (real or complex numbers).
    basis:    ``"chebyshev"``: p(x) = sum c_i T_i(y) with y = (2x - a - b) / (b - a) the map of
              ``interval`` = (a, b) onto [-1, 1]; ``"monomial"``: p(x) = sum c_i x^i.
    interval: (a, b) for the Chebyshev basis (must stay (-1, 1) for the monomial basis).
    """

    coeffs: tuple
    basis: str = "chebyshev"
    interval: tuple = (-1.0, 1.0)

    def __post_init__(self):
        cs = np.asarray(self.coeffs)
        if cs.ndim != 1 or cs.size == 0:
            raise ValueError("Polynomial: coeffs must be a non-empty 1-d sequence of numbers")
        if not (np.issubdtype(cs.dtype, np.number) and np.all(np.isfinite(cs))):
            raise TypeError("Polynomial: coeffs must be finite real or complex numbers")
        if self.basis not in _BASES:
            raise ValueError(f"Polynomial: basis must be one of {_BASES}, got {self.basis!r}")
        a, b = (float(v) for v in self.interval)
        if not (np.isfinite(a) and np.isfinite(b) and a < b):
            raise ValueError(f"Polynomial: interval must be (a, b) with a < b, got {self.interval!r}")
        if self.basis == "monomial" and (a, b) != (-1.0, 1.0):
            raise ValueError("Polynomial: the monomial basis has no interval (leave it at (-1, 1))")
        num = [complex(c) if np.iscomplexobj(cs) and complex(c).imag else float(np.real(c)) for c in cs]
        object.__setattr__(self, "coeffs", tuple(num))
        object.__setattr__(self, "interval", (a, b))

    @property
    def degree(self) -> int:
        """Index of the highest non-zero coefficient (0 for a constant)."""
        nz = [i for i, c in enumerate(self.coeffs) if c != 0]
        return nz[-1] if nz else 0

    @property
    def parity(self) -> str | None:
        """``"even"`` or ``"odd"`` when only even / odd coefficients are non-zero, else None."""
        idx = [i for i, c in enumerate(self.coeffs) if c != 0]
        if idx and all(i % 2 == 0 for i in idx):
            return "even"
        if idx and all(i % 2 == 1 for i in idx):
            return "odd"
        return None

    @property
    def needs_affine_map(self) -> bool:
        """Whether the input is mapped affinely onto [-1, 1] first (a Chebyshev basis on another interval)."""
        return self.basis == "chebyshev" and self.interval != (-1.0, 1.0)

    @property
    def depth(self) -> int:
        """Levels :func:`evaluate` consumes: ceil(log2(degree + 1)), plus one for the map of
        the interval onto [-1, 1]."""
        return self.degree.bit_length() + int(self.needs_affine_map)

    def __call__(self, x) -> np.ndarray:
        """Evaluate on the host (numpy float64/complex128), the reference for tests."""
        x = np.asarray(x)
        c = np.asarray(self.coeffs)
        if self.basis == "monomial":
            return np.polynomial.polynomial.polyval(x, c)
        a, b = self.interval
        return np.polynomial.chebyshev.chebval((2 * x - a - b) / (b - a), c)


def chebyshev_interpolate(f, degree: int, interval=(-1.0, 1.0), *, parity: str | None = None) -> Polynomial:
    """The Chebyshev interpolant of ``f`` (a numpy-vectorized function) of ``degree`` on
    ``interval`` = (a, b), at the degree + 1 Chebyshev nodes of the first kind (host, float64).

    ``parity="even"`` / ``"odd"`` zeroes the other coefficients (for f even / odd about the
    interval's midpoint, where they are zero up to rounding), so that :func:`evaluate` skips
    the other powers."""
    if isinstance(degree, bool) or not isinstance(degree, numbers.Integral) or degree < 1:
        raise ValueError(f"chebyshev_interpolate: degree must be an integer >= 1, got {degree!r}")
    if parity not in (None, "even", "odd"):
        raise ValueError(f"chebyshev_interpolate: parity must be None, 'even' or 'odd', got {parity!r}")
    a, b = (float(v) for v in interval)
    if not a < b:
        raise ValueError(f"chebyshev_interpolate: interval must be (a, b) with a < b, got {interval!r}")
    d = int(degree)
    theta = np.pi * (np.arange(d + 1) + 0.5) / (d + 1)
    y = np.cos(theta)
    vals = np.asarray(f((b - a) / 2 * y + (a + b) / 2))
    if vals.shape != y.shape:
        raise ValueError("chebyshev_interpolate: f must map an array of nodes to an array of the same shape")
    # c_j = (2 / (d + 1)) sum_k f(y_k) T_j(y_k), halved for j = 0 (discrete orthogonality)
    coeffs = 2.0 / (d + 1) * (np.cos(np.outer(np.arange(d + 1), theta)) @ vals)
    coeffs[0] /= 2
    if parity is not None:
        coeffs[1 if parity == "even" else 0::2] = 0
    return Polynomial(tuple(coeffs), "chebyshev", (a, b))


# -- homomorphic evaluation ---------------------------------------------------------------------

class _Basis:
    """The powers T_i (or x^i) of one input, computed on demand and cached per level."""

    def __init__(self, x: Ciphertext, chebyshev: bool, ctx: CKKSContext, evk: EvalKeys):
        self.top = x.level
        self.cheb = chebyshev
        self.ctx, self.evk = ctx, evk
        self.pow = {1: x}
        self.cache = {}

    @staticmethod
    def depth(i: int) -> int:
        """Levels below the input at which power i is produced: ceil(log2 i)."""
        return (i - 1).bit_length()

    def get(self, n: int) -> Ciphertext:
        if n not in self.pow:
            ctx, evk = self.ctx, self.evk
            if n & (n - 1) == 0:
                h = self.get(n // 2)
                p = ckks.mul(h, h, ctx, evk)
                rest = 1
            else:
                a = 1 << (n.bit_length() - 1)
                p = ckks.mul(self.get(a), self.get(n - a), ctx, evk)
                rest = self.get(2 * a - n) if self.cheb else None
            if self.cheb:  # T_{a+b} = 2 T_a T_b - T_{a-b}
                p = ckks.sub(ckks.add(p, p, ctx), rest, ctx)
            assert p.level == self.top - self.depth(n), (n, p.level)
            self.pow[n] = p
        return self.pow[n]

    def at(self, n: int, level: int) -> Ciphertext:
        """Power n at ``level`` (<= its own level; lowered with ckks.level_down, cached)."""
        if (n, level) not in self.cache:
            self.cache[(n, level)] = ckks.level_down(self.get(n), self.ctx, level)
        return self.cache[(n, level)]


def _relabel(ct: Ciphertext, scale: float, params) -> Ciphertext:
    """Set the scale label to ``scale``, which equals the tracked one up to float rounding."""
    assert ckks.scales_match(ct.scale, scale, params), (ct.scale, scale)
    return dataclasses.replace(ct, scale=scale)


def _split(c: np.ndarray, p: int, chebyshev: bool):
    """p(x) = low + high * T_P (or x^P): (high, low) coefficient arrays."""
    d = len(c) - 1
    high = c[p:].copy()
    low = c[:p].copy()
    if chebyshev:  # T_{P+i} = 2 T_P T_i - T_{P-i}
        high[1:] *= 2
        for i in range(1, d - p + 1):
            low[p - i] -= c[p + i]
    return high, low


def _trim(c: np.ndarray) -> np.ndarray:
    nz = np.flatnonzero(c)
    return c[: (nz[-1] + 1 if nz.size else 1)]


class _Evaluator:
    def __init__(self, basis: _Basis, baby_log: int, ctx: CKKSContext, evk: EvalKeys):
        self.basis, self.baby_log = basis, baby_log
        self.ctx, self.evk = ctx, evk
        self.params = ctx.params

    def rho(self, level: int) -> float:
        return float(self.params.ratio(level))

    def run(self, c: np.ndarray, level: int, scale: float):
        """sum c_i T_i as a ciphertext at ``level`` with scale ``scale`` (or a Python number
        when only c_0 is non-zero)."""
        c = _trim(c)
        d = len(c) - 1
        if d == 0:
            return c[0].item()
        nz = [i for i in range(1, d + 1) if c[i] != 0]
        reach = self.basis.top - level - 1  # powers must be at level + 1
        if d < (1 << self.baby_log) and all(_Basis.depth(i) <= reach for i in nz):
            return self.leaf(c, nz, level, scale)
        p = 1 << (d.bit_length() - 1)
        high, low = _split(c, p, self.basis.cheb)
        g = self.basis.at(p, level + 1)
        pre = scale * self.rho(level + 1)  # scale of high * T_P before its rescale
        h = self.run(high, level + 1, pre / g.scale)
        if isinstance(h, Ciphertext):
            out = ckks.mul(h, g, self.ctx, self.evk)
        else:  # a constant times T_P
            out = ckks.mul(g, h, self.ctx, const_scale=pre / g.scale)
        out = _relabel(out, scale, self.params)
        lo = self.run(low, level, scale)
        if isinstance(lo, Ciphertext):
            return _relabel(ckks.add(out, lo, self.ctx), scale, self.params)
        return ckks.add(out, lo, self.ctx) if lo != 0 else out

    def leaf(self, c, nz, level, scale):
        pre = scale * self.rho(level + 1)
        acc = None
        for i in nz:
            t = self.basis.at(i, level + 1)
            term = ckks.mul(t, c[i].item(), self.ctx, const_scale=pre / t.scale, rescale=False)
            acc = term if acc is None else ckks.add(acc, term, self.ctx)
        if c[0] != 0:
            acc = ckks.add(acc, c[0].item(), self.ctx)
        return _relabel(ckks.rescale(acc, self.ctx), scale, self.params)


def evaluate(ct: Ciphertext, poly: Polynomial, ctx: CKKSContext, evk: EvalKeys, *,
             scale: float | None = None, baby_log: int | None = None) -> Ciphertext:
    """p(ct) slot-wise.

    ct:       a :class:`jax_fhe.ckks.Ciphertext` at level L >= ``poly.depth``, best at (about)
              its level's default scale; slots hold x (in ``poly.interval`` for accuracy).
    poly:     a :class:`Polynomial` of degree >= 1.
    evk:      evaluation keys with a relinearization key.
    scale:    the output scale (default: the default scale of the output level).
    baby_log: baby steps are the powers below 2^baby_log (default ceil(m / 2), m = the bit
              length of the degree); larger parts are split at powers of two.

    Returns a ciphertext at level L - ``poly.depth`` with scale ``scale`` exactly, same batch
    shape and slot count. Works under ``jax.jit`` (``poly`` is static)."""
    if not isinstance(poly, Polynomial):
        raise TypeError(f"evaluate: expected a Polynomial, got {type(poly).__name__}")
    if not isinstance(ct, Ciphertext):
        raise TypeError(f"evaluate: expected a Ciphertext, got {type(ct).__name__}")
    if not isinstance(evk, EvalKeys) or evk.relin is None:
        raise ValueError("evaluate: needs EvalKeys with a relinearization key")
    p = ctx.params
    d = poly.degree
    if d < 1:
        raise ValueError("evaluate: the polynomial is a constant; use ckks.add / ckks.mul")
    if ct.level < poly.depth:
        raise ValueError(f"evaluate: degree {d} needs {poly.depth} levels, the ciphertext is at "
                         f"level {ct.level}")
    if baby_log is None:
        baby_log = (d.bit_length() + 1) // 2
    if isinstance(baby_log, bool) or not isinstance(baby_log, numbers.Integral) or baby_log < 1:
        raise ValueError(f"evaluate: baby_log must be an integer >= 1, got {baby_log!r}")
    x = ct
    if poly.needs_affine_map:  # y = alpha x + beta: one constant multiplication (a level)
        a, b = poly.interval
        x = ckks.mul(x, 2.0 / (b - a), ctx)
        if a + b != 0:
            x = ckks.add(x, -(a + b) / (b - a), ctx)
    out_level = ct.level - poly.depth
    target = p.default_scale(out_level) if scale is None else float(scale)
    if not target > 0:
        raise ValueError(f"evaluate: scale must be positive, got {scale}")
    basis = _Basis(x, poly.basis == "chebyshev", ctx, evk)
    c = np.asarray(poly.coeffs, dtype=np.complex128 if any(isinstance(v, complex) for v in poly.coeffs)
                   else np.float64)
    out = _Evaluator(basis, int(baby_log), ctx, evk).run(c, out_level, target)
    assert isinstance(out, Ciphertext) and out.level == out_level, (out, out_level)
    return out
