"""Plaintext and ciphertext pytrees.

Array data are leaves; the parameter set, level, scale and slot count are static auxiliary data.
The level must be static (it fixes the number of limbs). The scale is static too: it is a
deterministic float that only changes at multiplications and rescales, and the evaluator needs
it at trace time to encode constants exactly (integer rounding on the host, no x64 on device).
A jitted circuit therefore compiles once per (level, scale) pattern, which a fixed circuit
repeats identically on every call.
"""
from __future__ import annotations

import jax
import numpy as np

from ..rlwe.ciphertext import Ciphertext as RLWECiphertext
from ..rns.pytree import pytree_dataclass, static_field
from .params import CKKSParams


@pytree_dataclass
class Plaintext:
    """An encoded message: data uint32[..., L, N] (NTT domain, limb i on row
    ``params.rows(level)[i]``), holding round(scale * m(X))."""

    data: jax.Array
    level: int = static_field()
    scale: float = static_field()
    slots: int = static_field()
    params: CKKSParams = static_field()

    def __repr__(self) -> str:
        return (f"Plaintext(shape={tuple(self.data.shape)}, level={self.level}, "
                f"scale=2^{np.log2(self.scale):.3f}, slots={self.slots}, params={self.params.name!r})")


@pytree_dataclass
class Ciphertext(RLWECiphertext):
    """A CKKS ciphertext: the RLWE ciphertext (:class:`jax_fhe.rlwe.Ciphertext`) data
    uint32[..., k, L, N] in the NTT domain over the rows of ``level`` (k = 2; 3 after a
    multiplication without relinearization), whose phase c0 + c1 s (+ c2 s^2) is the
    Plaintext; leading axes are batch axes (``ct[i]`` indexes them)."""

    level: int = static_field()
    scale: float = static_field()
    slots: int = static_field()
    params: CKKSParams = static_field()

    def __repr__(self) -> str:
        deg = "" if self.size == 2 else f", degree={self.degree}"
        return (f"Ciphertext(shape={tuple(self.data.shape)}, level={self.level}, "
                f"scale=2^{np.log2(self.scale):.3f}, slots={self.slots}{deg}, params={self.params.name!r})")


def check_data(x, params: CKKSParams, level: int, lead: tuple, what: str):
    """Raise TypeError/ValueError unless x is uint32[..., *lead, L, N] for ``level`` (an entry
    None in ``lead`` accepts any size there)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or np.dtype(dtype) != np.uint32:
        raise TypeError(f"{what}: data must be a uint32 array, got {dtype if dtype is not None else type(x).__name__}")
    want = tuple(lead) + (len(params.rows(level)), params.n)
    got = tuple(x.shape[-len(want):]) if x.ndim >= len(want) else ()
    if not got or any(w is not None and g != w for g, w in zip(got, want)):
        # an open size shows as the data's own (or k): the limbs and N are what is wrong
        want = tuple(w if w is not None else (g if g in (2, 3) else "k")
                     for w, g in zip(want, got or (None,) * len(want)))
        raise ValueError(f"{what}: data has shape {tuple(x.shape)}, expected [..., "
                         f"{', '.join(map(str, want))}] for level {level} of {params.name!r}")
