"""BFV (and BGV) plaintext and ciphertext pytrees.

A :class:`Plaintext` holds the coefficients of m(X) in Z_t[X]/(X^N + 1): ``data``
uint32[..., N] in [0, t) (batch encoding maps N slots to them, :mod:`.encoder`); BFV and BGV
share it. A BFV :class:`Ciphertext` is the RLWE ciphertext (:class:`jax_fhe.rlwe.Ciphertext`)
``uint32[..., k, L, N]`` over every q prime, NTT domain, whose phase x = c0 + c1 s (+ c2 s^2)
satisfies t x = Q m + E (mod t Q) with |E| < Q/2 (E: the noise, :mod:`.noise`).
"""
from __future__ import annotations

import jax
import numpy as np

from ..rlwe.ciphertext import Ciphertext as RLWECiphertext
from ..rlwe.params import RLWEParams
from ..rns.pytree import pytree_dataclass, static_field
from .params import BFVParams


@pytree_dataclass
class Plaintext:
    """Coefficients of m(X) mod t: ``data`` uint32[..., N] in [0, t); leading axes are batch
    axes. Static ``params`` (a BFV or BGV parameter set)."""

    data: jax.Array
    params: RLWEParams = static_field()

    def __repr__(self) -> str:
        return f"Plaintext(shape={tuple(self.data.shape)}, t={self.params.plain_modulus}, params={self.params.name!r})"


@pytree_dataclass
class MulOperand:
    """A plaintext prepared for ciphertext x plaintext products (``bfv.mul_operand``,
    ``bgv.mul_operand``): the centered lift [m]_t on the primes of ``level``, NTT domain:
    ``data`` uint32[..., L, N]. A product with it is one element-wise pass (a Plaintext is
    lifted and transformed inside every product). Static ``params``; ``level`` (BGV: the
    ciphertexts' level it multiplies; BFV: None, every q prime)."""

    data: jax.Array
    params: RLWEParams = static_field()
    level: int | None = static_field(default=None)

    def __repr__(self) -> str:
        at = "" if self.level is None else f", level={self.level}"
        return f"MulOperand(shape={tuple(self.data.shape)}{at}, params={self.params.name!r})"


@pytree_dataclass
class Ciphertext(RLWECiphertext):
    """A BFV ciphertext: data uint32[..., k, L, N] (NTT domain, every q prime; k = 2, or 3 after
    ``mul(..., relinearize=False)``). ``ct[i]`` indexes the batch axes."""

    params: BFVParams = static_field()

    def __repr__(self) -> str:
        deg = "" if self.size == 2 else f", degree={self.degree}"
        return f"bfv.Ciphertext(shape={tuple(self.data.shape)}{deg}, params={self.params.name!r})"


def check_plaintext(pt, params, what: str) -> Plaintext:
    """Raise unless ``pt`` is a Plaintext of ``params`` with data uint32[..., N]."""
    if not isinstance(pt, Plaintext):
        raise TypeError(f"{what}: expected a Plaintext, got {type(pt).__name__}")
    if pt.params != params:
        raise ValueError(f"{what}: plaintext is for {pt.params.name!r}, not {params.name!r}")
    dtype = getattr(pt.data, "dtype", None)
    if dtype is None or np.dtype(dtype) != np.uint32:
        raise TypeError(f"{what}: plaintext data must be uint32 coefficients in [0, t), got {dtype}")
    if pt.data.ndim < 1 or pt.data.shape[-1] != params.n:
        raise ValueError(f"{what}: plaintext data has shape {tuple(pt.data.shape)}, expected [..., {params.n}]")
    return pt


def check_mul_operand(b, params, rows: int, level, what: str) -> MulOperand:
    """Raise unless ``b`` is a MulOperand of ``params`` at ``level`` with data uint32[..., rows, N]."""
    if b.params != params:
        raise ValueError(f"{what}: the MulOperand is for {b.params.name!r}, not {params.name!r}")
    if b.level != level:
        raise ValueError(f"{what}: the MulOperand was prepared for level {b.level}, the ciphertext is at "
                         f"level {level} (mul_operand(pt, ctx, level={level}))")
    dtype = getattr(b.data, "dtype", None)
    if dtype is None or np.dtype(dtype) != np.uint32 or b.data.ndim < 2 or b.data.shape[-2:] != (rows, params.n):
        raise ValueError(f"{what}: MulOperand data must be uint32[..., {rows}, {params.n}], got "
                         f"{dtype}{list(getattr(b.data, 'shape', ()))}")
    return b


def check_data(x, params, rows: int, what: str, *, any_degree: bool) -> None:
    """Raise unless x is uint32[..., k, rows, N] (k = 2 unless ``any_degree``: 2 or 3)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or np.dtype(dtype) != np.uint32:
        got = dtype if dtype is not None else type(x).__name__
        raise TypeError(f"{what}: ciphertext data must be uint32, got {got}")
    if x.ndim < 3 or x.shape[-2:] != (rows, params.n) or x.shape[-3] not in ((2, 3) if any_degree else (2,)):
        k = "2 or 3" if any_degree else "2"
        raise ValueError(f"{what}: ciphertext data has shape {tuple(x.shape)}, expected [..., {k}, {rows}, "
                         f"{params.n}] for {params.name!r}")
