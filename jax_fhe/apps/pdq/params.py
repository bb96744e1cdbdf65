"""CKKS parameter sets for private queries: n16-boot (the GPU set) and small CPU test sets."""
from __future__ import annotations

import functools

from ... import ckks
from ...ckks.presets import build_chain, cheddar_shape

__all__ = ["PRESETS", "preset", "toy_n11", "toy_n12"]


def _toy(log_n: int, top: int, name: str) -> ckks.CKKSParams:
    shapes = [cheddar_shape(l) for l in range(top + 1)]
    q, p, levels = build_chain(1 << log_n, shapes, [None] * top, log_scale=40, num_special=4)
    return ckks.CKKSParams(log_n, q, p, levels, log_scale=40, alpha=4, name=name, insecure=True)


@functools.cache
def toy_n11() -> ckks.CKKSParams:
    """INSECURE N = 2^11 test set: 12 levels of 2^40 (Cheddar's rational plan, 18 limbs at the
    top), alpha = 4: 1,024 slots = 32 rows per ciphertext at 32 bits."""
    return _toy(11, 12, "pdq-toy-N11")


@functools.cache
def toy_n12() -> ckks.CKKSParams:
    """INSECURE N = 2^12 test set: as :func:`toy_n11` with 2,048 slots (64 rows per ciphertext)."""
    return _toy(12, 12, "pdq-toy-N12")


PRESETS = {"n16-boot": ckks.ckks_n16_boot, "toy-n11": toy_n11, "toy-n12": toy_n12}


def preset(name: str) -> ckks.CKKSParams:
    """A parameter set by name: ``n16-boot`` (N = 2^16, 1,024 rows per ciphertext; fresh tables
    at level 16) or the INSECURE CPU sets ``toy-n11``/``toy-n12``."""
    try:
        return PRESETS[name]()
    except KeyError:
        raise ValueError(f"unknown PDQ preset {name!r}; choose one of {sorted(PRESETS)}") from None
