"""Precision statistics: bits of precision of decrypted values against a float64 reference."""
from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Precision:
    """mean_bits = -log2(mean |err|), min_bits = -log2(max |err|), with |err| the absolute
    (complex modulus) error per slot."""

    mean_bits: float
    min_bits: float

    def __str__(self) -> str:
        return f"{self.mean_bits:.1f} bits mean, {self.min_bits:.1f} bits min"


def precision(want, got) -> Precision:
    """Bits of precision of ``got`` against the reference ``want`` (arrays of any shape, real or
    complex): :class:`Precision` with -log2 of the mean and of the largest absolute error."""
    err = np.abs(np.asarray(got, dtype=np.complex128) - np.asarray(want, dtype=np.complex128))
    tiny = 2.0**-100  # an exact result reads as 100 bits
    return Precision(mean_bits=float(-np.log2(max(err.mean(), tiny))),
                     min_bits=float(-np.log2(max(err.max(), tiny))))
