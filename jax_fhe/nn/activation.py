"""ReLU as a polynomial: a composite approximation of sign (Lee et al., "Minimax approximation of
sign function by composite polynomial for homomorphic comparison", and their ICML 2022 use in
ResNet-20) without retraining.

ReLU(x) = x (1 + sign(x)) / 2. For inputs scaled into [-1, 1] (the compiler divides each
activation's input by a bound measured on the plaintext model), sign is approximated on
[-1, -eps] U [eps, 1] by p_k o ... o p_1, odd polynomials of the given degrees. Each p_i is a
(near-)minimax fit of sign on the image of the previous stages (Lawson's iteratively
reweighted least squares on a dense grid, in the Chebyshev basis), the intermediate stages
divided by their maximum so that every stage's input stays in [-1, 1] (no affine map, so a
degree-d stage costs ceil(log2(d + 1)) levels). The last stage is evaluated as q = (1 + p_k) / 2
(its coefficients halved, 1/2 added: no extra level) and the activation is x q(x): depth = the
sum of the stages' depths + 1.

:class:`PolyReLU` evaluates the same thing in numpy (the reference the compiler's simulation and
the accuracy figures use) and on ciphertexts with :func:`jax_fhe.circuits.evaluate`.
"""
from __future__ import annotations

import dataclasses
import numpy as np

from .. import ckks, circuits

__all__ = ["CompositeSign", "PolyReLU", "composite_sign", "fit_odd_sign"]


def fit_odd_sign(degree: int, lo: float, hi: float = 1.0, *, iterations: int = 60,
                 grid: int = 4000) -> tuple:
    """Chebyshev coefficients (on [-1, 1]) of an odd polynomial of ``degree`` that approximates
    sign on [lo, hi] U [-hi, -lo] (0 < lo < hi <= 1) in the max norm (Lawson's algorithm).
    Returns (coeffs, max error on the grid)."""
    if degree < 1 or degree % 2 == 0:
        raise ValueError(f"fit_odd_sign: degree must be odd >= 1, got {degree}")
    if not 0 < lo < hi <= 1:
        raise ValueError(f"fit_odd_sign: need 0 < lo < hi <= 1, got {lo}, {hi}")
    # points denser near lo, where the error peaks
    x = lo + (hi - lo) * (1 - np.cos(np.linspace(0, np.pi, grid))) / 2
    odd = np.arange(1, degree + 1, 2)
    basis = np.cos(np.outer(np.arccos(x), odd))          # T_k(x) for odd k
    w = np.full(len(x), 1.0 / len(x))
    best, best_err = None, np.inf
    for _ in range(iterations):
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(basis * sw[:, None], sw, rcond=None)
        err = np.abs(basis @ c - 1)
        if err.max() < best_err:
            best, best_err = c, err.max()
        w = w * (err + 1e-300)
        w /= w.sum()
    coeffs = np.zeros(degree + 1)
    coeffs[odd] = best
    return tuple(float(v) for v in coeffs), float(best_err)


@dataclasses.dataclass(frozen=True)
class CompositeSign:
    """p_k o ... o p_1 ~ sign on [-1, -eps] U [eps, 1] (hashable, static under jit).

    stages: the :class:`jax_fhe.circuits.Polynomial` of each stage (Chebyshev on [-1, 1]).
    eps:    the gap around 0 the approximation is fitted outside of.
    error:  max |p(x) - sign(x)| for eps <= |x| <= 1 (on the fitting grid)."""

    stages: tuple
    eps: float
    error: float

    @property
    def depth(self) -> int:
        """Levels: the sum of the stages' depths."""
        return sum(p.depth for p in self.stages)

    def __call__(self, x) -> np.ndarray:
        """The composite in float64 numpy, as the ciphertexts get it (no clipping: outside
        [-1, 1] the stages diverge, here as there)."""
        y = np.asarray(x, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            for p in self.stages:
                y = np.real(p(y))
        return y


def composite_sign(degrees=(7, 15, 15), eps: float = 2.0 ** -6) -> CompositeSign:
    """Fit the composite sign approximation (see the module doc). The stage fits are
    deterministic (host numpy, a few ms each)."""
    degrees = tuple(int(d) for d in degrees)
    if not degrees or any(d < 1 or d % 2 == 0 for d in degrees):
        raise ValueError(f"composite_sign: degrees must be odd >= 1, got {degrees}")
    if not 0 < eps < 1:
        raise ValueError(f"composite_sign: eps must be in (0, 1), got {eps}")
    stages, lo, hi = [], eps, 1.0
    for i, d in enumerate(degrees):
        c, _ = fit_odd_sign(d, lo, hi)
        poly = circuits.Polynomial(c)
        grid = np.linspace(lo, hi, 20001)
        vals = np.real(poly(grid))
        if i < len(degrees) - 1:                        # rescale into [-1, 1] for the next stage
            top = float(np.abs(np.real(poly(np.linspace(0, 1, 20001)))).max())
            poly = circuits.Polynomial(tuple(v / top for v in c))
            vals = vals / top
        lo, hi = float(vals.min()), min(float(vals.max()), 1.0)
        if not lo > 0:
            raise ValueError(f"composite_sign: stage {i} (degree {d}) is not positive on [eps, 1]; "
                             "raise eps or the degrees")
        stages.append(poly)
    grid = np.concatenate([np.linspace(eps, 1, 40001)])
    out = CompositeSign(tuple(stages), float(eps), 0.0)
    err = float(np.abs(out(grid) - 1).max())
    return dataclasses.replace(out, error=err)


@dataclasses.dataclass(frozen=True)
class PolyReLU:
    """ReLU(x) ~ x (1 + sign~(x)) / 2 for x in [-1, 1] (hashable, static under jit).

    sign: the :class:`CompositeSign`, or None for ``poly``;
    poly: instead of a sign: a direct polynomial approximation of ReLU on [-1, 1] (small toy
          parameter sets with few levels), a :class:`jax_fhe.circuits.Polynomial`."""

    sign: CompositeSign | None = None
    poly: circuits.Polynomial | None = None

    def __post_init__(self):
        if (self.sign is None) == (self.poly is None):
            raise ValueError("PolyReLU: give exactly one of sign= and poly=")

    @classmethod
    def direct(cls, degree: int) -> "PolyReLU":
        """ReLU interpolated at Chebyshev points of ``degree`` on [-1, 1]."""
        return cls(poly=circuits.chebyshev_interpolate(lambda v: np.maximum(v, 0), degree))

    @property
    def depth(self) -> int:
        """Levels one activation consumes."""
        return self.poly.depth if self.poly is not None else self.sign.depth + 1

    @property
    def bound(self) -> float:
        """max |act(x) - ReLU(x)| over [-1, 1] (on a grid)."""
        x = np.linspace(-1, 1, 40001)
        return float(np.abs(self(x) - np.maximum(x, 0)).max())

    @property
    def half_last(self) -> circuits.Polynomial:
        """(1 + p_k) / 2 for the last sign stage p_k."""
        c = [v / 2 for v in self.sign.stages[-1].coeffs]
        c[0] += 0.5
        return circuits.Polynomial(tuple(c))

    def __call__(self, x) -> np.ndarray:
        """In float64 numpy, the polynomials the ciphertexts get. Not clipped: the fit holds on
        [-1, 1] only, and beyond it the value diverges (degree 31 gives 12.4 at x = 1.09), here
        as in the encrypted program, so that a reference computed with it fails where the
        encrypted one does (``compiler.polynomial_forward(..., with_ratio=True)`` finds such inputs)."""
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            if self.poly is not None:
                return np.real(self.poly(x))
            y = x
            for p in self.sign.stages[:-1]:
                y = np.real(p(y))
            return x * np.real(self.half_last(y))

    def encrypted(self, ct: ckks.Ciphertext, ctx: ckks.CKKSContext, evk: ckks.EvalKeys) -> ckks.Ciphertext:
        """The activation on a ciphertext (level >= :attr:`depth`; works under jit)."""
        if self.poly is not None:
            return circuits.evaluate(ct, self.poly, ctx, evk)
        s = ct
        for p in self.sign.stages[:-1] + (self.half_last,):
            s = circuits.evaluate(s, p, ctx, evk)
        # x brought down at the scale that puts x * s, after its rescale, on the default scale of
        # level s.level - 1 (a bootstrap or a linear layer may follow and expects it)
        cp, lvl = ctx.params, s.level
        x_scale = float(cp.default_scale(lvl - 1)) * float(cp.ratio(lvl)) / float(s.scale)
        return ckks.mul(ckks.level_down(ct, ctx, lvl, scale=x_scale), s, ctx, evk)
