"""EvalMod: x -> (1/2 pi) sin(2 pi x), which is x mod 1 near the integers (bootstrapping).

For u = I + e (I an integer, |I| < K, e small), (1/2 pi) sin(2 pi u) = e - (2 pi)^2 e^3 / 6 + ...
The circuit (Cheddar's and Lattigo's, notes/ckks-32bit-design.md §3.4):

1. the input slots hold y = u / K (the 1/K is folded into CoeffToSlot's constant); add
   -1/(4K): y' = (u - 1/4) / K in [-1, 1] for u in [-K + 1/4, K + 1/4];
2. p(y') ~ a_0 cos(2 pi K y' / 2^r) = a_0 cos(2 pi (u - 1/4) / 2^r), a_0 = (1/2 pi)^(1/2^r):
   an even polynomial of ``degree`` in the Chebyshev basis (ceil(log2(degree + 1)) levels);
3. r double angles x <- 2 x^2 - a_i^2 (a_{i+1} = a_i^2): a_i cos(t) -> a_{i+1} cos(2t), so after
   r steps (1/2 pi) cos(2 pi (u - 1/4)) = (1/2 pi) sin(2 pi u) (one level each);
4. optionally (``arcsine_degree`` > 0) the odd Taylor polynomial of arcsin(2 pi s) / (2 pi), which
   turns (1/2 pi) sin(2 pi u) into u - I itself (ceil(log2(degree + 1)) more levels; off by
   default, as in Cheddar and Lattigo's dense-secret sets).

**The fit.** p is the Chebyshev interpolant of the scaled cosine at degree + 1 Chebyshev nodes
on [-1, 1] (uniform, not concentrated at the integers like Cheddar's or Lattigo's discrete
cosine fit). Error of the composed map (steps 1-3, float64) against (1/2 pi) sin(2 pi u) for
u = I + e, |e| <= 2^-9, measured by :func:`error_profile` for the defaults (K = 16,
degree 30, r = 3): between 2^-37 and 2^-30 for every |I| <= 16 (2^-36.8 at I = 0, worst
2^-30.3 at |I| = 12 and 16). Cheddar's shipped coefficients reach ~2^-43 for |I| <= 7 but only
2^-22 at |I| = 15 (§3.4). Either way the map's own error against u mod 1, (2 pi)^2 e^3 / 6
(2^-24.3 at |e| = 2^-9), dominates unless the arcsine step is used.

**Scales.** Planned top-down from the output scale S (default: the output level's default
scale): the double angle from level l squares, so its input scale is sqrt(S_next rho_l); the
polynomial is evaluated straight onto the first of these (see
:mod:`jax_fhe.circuits.polynomial`). The input should be at (about) its level's default scale
(at bootstrapping levels, ~rho).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import numbers

import numpy as np

from .. import ckks
from ..ckks import CKKSContext, Ciphertext, EvalKeys
from .polynomial import Polynomial, chebyshev_interpolate, evaluate

__all__ = ["Mod1Params", "error_profile", "eval_mod1", "mod1_reference"]


@dataclasses.dataclass(frozen=True)
class Mod1Params:
    """EvalMod parameters (Cheddar's defaults).

    K:              |I| < K (the input slot holds u / K); the polynomial's interval is
                    u in [-K + 1/4, K + 1/4].
    degree:         degree of the even Chebyshev approximation of the scaled cosine.
    double_angle:   r, the number of double-angle steps (the cosine's argument is divided by 2^r).
    arcsine_degree: 0 (off) or an odd degree for the arcsine Taylor correction.
    fit_sigma:      None: the cosine is the Chebyshev interpolant on the whole interval (error
                    2^-36.8 .. 2^-30.3 for |I| <= 16 after the double angles); a number s: a
                    "discrete" fit, weighted least squares on the neighbourhoods |u - I| <= 2^-10
                    of the integers with weights exp(-I^2 / 2 s^2), which spends the accuracy
                    where ModRaise's overflow I lands: with a sparse secret of Hamming weight h,
                    I is about normal with deviation sqrt((h + 1) / 12) (1.66 for h = 32), and
                    s = 2.5 gives 2^-46 .. 2^-43 for |I| <= 7, 2^-38 at 10, 2^-30 at 12.
    """

    K: int = 16
    degree: int = 30
    double_angle: int = 3
    arcsine_degree: int = 0
    fit_sigma: float | None = None

    def __post_init__(self):
        for name in ("K", "degree", "double_angle", "arcsine_degree"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
                raise ValueError(f"Mod1Params: {name} must be a non-negative integer, got {v!r}")
        if self.K < 1 or self.degree < 2 or self.degree % 2:
            raise ValueError(f"Mod1Params: need K >= 1 and an even degree >= 2, got K={self.K}, "
                             f"degree={self.degree}")
        if self.fit_sigma is not None and not float(self.fit_sigma) > 0:
            raise ValueError(f"Mod1Params: fit_sigma must be positive or None, got {self.fit_sigma!r}")
        if self.arcsine_degree and self.arcsine_degree % 2 == 0:
            raise ValueError(f"Mod1Params: arcsine_degree must be 0 or odd, got {self.arcsine_degree}")

    @property
    def a0(self) -> float:
        """(1/2 pi)^(1/2^r): the cosine's amplitude before the double angles."""
        return (1 / (2 * math.pi)) ** (1.0 / 2 ** self.double_angle)

    @functools.cached_property
    def cosine(self) -> Polynomial:
        """p(y') ~ a_0 cos(2 pi K y' / 2^r) on [-1, 1], even, Chebyshev basis."""
        k, r, a0 = self.K, self.double_angle, self.a0
        f = lambda y: a0 * np.cos(2 * np.pi * k * y / 2 ** r)  # noqa: E731
        if self.fit_sigma is None:
            return chebyshev_interpolate(f, self.degree, parity="even")
        return _discrete_fit(f, self.K, self.degree, float(self.fit_sigma))

    @functools.cached_property
    def arcsine(self) -> Polynomial | None:
        """arcsin(2 pi s) / (2 pi) to ``arcsine_degree`` (monomial basis), or None."""
        if not self.arcsine_degree:
            return None
        c = np.zeros(self.arcsine_degree + 1)
        term = 1.0  # arcsin x = sum_k (2k)! / (4^k (k!)^2 (2k+1)) x^(2k+1)
        for k in range((self.arcsine_degree - 1) // 2 + 1):
            if k:
                term *= (2 * k - 1) / (2 * k)
            c[2 * k + 1] = term / (2 * k + 1) * (2 * math.pi) ** (2 * k)
        return Polynomial(tuple(c), "monomial")

    @property
    def depth(self) -> int:
        """Levels consumed: the cosine, the double angles, the arcsine."""
        return (self.cosine.depth + self.double_angle
                + (self.arcsine.depth if self.arcsine is not None else 0))


def _discrete_fit(f, K: int, degree: int, sigma: float, delta: float = 2.0 ** -10) -> Polynomial:
    """The even Chebyshev polynomial of ``degree`` in y = (u - 1/4) / K minimizing
    sum_I w_I sum_{|u - I| <= delta} (p(y) - f(y))^2, w_I = exp(-I^2 / 2 sigma^2), |I| < K
    (host least squares over 41 points per integer)."""
    u = np.concatenate([i + np.linspace(-delta, delta, 41) for i in range(-K + 1, K)])
    w = np.exp(-np.round(u) ** 2 / (2 * sigma * sigma))
    y = (u - 0.25) / K
    js = np.arange(0, degree + 1, 2)
    basis = np.cos(np.outer(np.arccos(np.clip(y, -1.0, 1.0)), js))         # T_j(y), even j
    c, *_ = np.linalg.lstsq(basis * w[:, None], f(y) * w, rcond=None)
    coeffs = np.zeros(degree + 1)
    coeffs[0::2] = c
    return Polynomial(tuple(coeffs), "chebyshev", (-1.0, 1.0))


def mod1_reference(u, mp: Mod1Params = Mod1Params()) -> np.ndarray:
    """The circuit's map computed in float64 on the host: u -> output slot (for error studies;
    no encryption noise)."""
    y = (np.asarray(u, dtype=np.float64) - 0.25) / mp.K
    x = mp.cosine(y)
    a = mp.a0
    for _ in range(mp.double_angle):
        x = 2 * x * x - a * a
        a = a * a
    return mp.arcsine(x) if mp.arcsine is not None else x


def error_profile(mp: Mod1Params = Mod1Params(), *, eps: float = 2.0 ** -9, points: int = 257) -> dict:
    """{I: log2 max |mod1_reference(u) - target(u)|} over u in [I - eps, I + eps] for
    0 <= I <= K (both signs), target (1/2 pi) sin(2 pi u), or u - I with the arcsine step."""
    out = {}
    for i in range(mp.K + 1):
        u = np.concatenate([i + np.linspace(-eps, eps, points), -i + np.linspace(-eps, eps, points)])
        u = u[np.abs(u - 0.25) <= mp.K]
        if not u.size:
            continue
        want = u - np.round(u) if mp.arcsine is not None else np.sin(2 * np.pi * u) / (2 * np.pi)
        out[i] = float(np.log2(max(np.abs(mod1_reference(u, mp) - want).max(), 2.0 ** -100)))
    return out


def eval_mod1(ct: Ciphertext, mp: Mod1Params, ctx: CKKSContext, evk: EvalKeys, *,
              scale: float | None = None) -> Ciphertext:
    """EvalMod on every slot.

    ct:    slots hold u / K (real parts; u = I + e with |I| < K), at level L >= ``mp.depth``,
           scale about the level's default.
    evk:   evaluation keys with a relinearization key.
    scale: the output scale (default: the default scale of level L - mp.depth).
    Returns a ciphertext at level L - ``mp.depth`` (8 levels for the defaults) holding
    (1/2 pi) sin(2 pi u) ~ e (with the arcsine step: ~ e itself), scale ``scale`` exactly."""
    if not isinstance(mp, Mod1Params):
        raise TypeError(f"eval_mod1: expected Mod1Params, got {type(mp).__name__}")
    if not isinstance(ct, Ciphertext):
        raise TypeError(f"eval_mod1: expected a Ciphertext, got {type(ct).__name__}")
    p = ctx.params
    if ct.level < mp.depth:
        raise ValueError(f"eval_mod1: needs {mp.depth} levels, the ciphertext is at level {ct.level}")
    out_level = ct.level - mp.depth
    final = p.default_scale(out_level) if scale is None else float(scale)
    asin_depth = mp.arcsine.depth if mp.arcsine is not None else 0
    # scales top-down: after the double angles (at level out_level + asin_depth) ...
    da_end = out_level + asin_depth
    s = final if mp.arcsine is None else p.default_scale(da_end)
    targets = [s]
    for lvl in range(da_end + 1, da_end + mp.double_angle + 1):  # squaring at lvl lands on lvl-1
        s = math.sqrt(s * float(p.ratio(lvl)))
        targets.append(s)
    targets.reverse()  # targets[0]: the cosine's output scale; targets[i+1]: after step i
    x = ckks.add(ct, -0.25 / mp.K, ctx)
    x = evaluate(x, mp.cosine, ctx, evk, scale=targets[0])
    a = mp.a0
    for i in range(mp.double_angle):
        sq = ckks.mul(x, x, ctx, evk)
        x = ckks.sub(ckks.add(sq, sq, ctx), a * a, ctx)
        assert ckks.scales_match(x.scale, targets[i + 1], p), (x.scale, targets[i + 1])
        x = dataclasses.replace(x, scale=targets[i + 1])
        a = a * a
    if mp.arcsine is not None:
        x = evaluate(x, mp.arcsine, ctx, evk, scale=final)
    assert x.level == out_level
    return x
