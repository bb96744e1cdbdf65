"""The fixed-point CRT quotient round(sum_l y_l / q_l), and the tables of centered (exact) base
conversion that use it.

With y_l = [x (Q/q_l)^-1]_{q_l}, x = sum_l y_l (Q/q_l) - v Q where v = floor(sum_l y_l / q_l);
rounding instead of flooring gives the centered representative. Each term is y_l * 2^F / q_l as
``mulhi(y_l, floor(2^(32+F) / q_l))`` with F = min(28, bits(min q) - 1), so the reciprocals fit a
word, each term is off by less than 2 units of 2^-F, and up to 16 terms sum within a word.
Integer arithmetic makes the result identical on every backend; it can differ from the exact
rounding only when the fraction is within 2 L 2^-F of 1/2.

This module builds the host tables; :func:`jax_fhe.ops.rounded_quotient` and
:func:`jax_fhe.ops.exact_conv` compute with them.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import numpy as np

from .bconv import BConvTable, make_bconv_table
from .pytree import pytree_dataclass, static_field
from .shoup import device_u32

MAX_TERMS = 16  # terms below 2^28 each: the sum fits in 32 bits


@pytree_dataclass
class CrtQuotient:
    """inv_fix: uint32[L] = floor(2^(32 + fix_bits) / q_l); static ``fix_bits``."""

    inv_fix: jax.Array
    fix_bits: int = static_field()


def quotient_fix_bits(primes: Sequence[int]) -> int:
    """F, the fixed-point precision of the CRT quotient of ``primes`` (its rounding is within
    2 L 2^-F of the exact fraction)."""
    return min(28, min(int(q).bit_length() for q in primes) - 1)


def make_crt_quotient(primes: Sequence[int]) -> CrtQuotient:
    primes = [int(q) for q in primes]
    if not 1 <= len(primes) <= MAX_TERMS:
        raise ValueError(f"the fixed-point CRT quotient needs 1..{MAX_TERMS} primes, got {len(primes)}")
    fix = quotient_fix_bits(primes)
    return CrtQuotient(inv_fix=device_u32([(1 << (32 + fix)) // q for q in primes]), fix_bits=fix)


@pytree_dataclass
class ExactConv:
    """Tables of a centered base conversion from rows ``src_rows`` to rows ``dst_rows`` of a
    prime list (:func:`jax_fhe.ops.exact_conv` computes it).

    table:    the :class:`BConvTable` of the fast conversion.
    src_prod: uint32[Lout]  (prod of the source primes) mod each target prime.
    quotient: the fixed-point CRT quotient of the source primes.
    """

    table: BConvTable
    src_prod: jax.Array
    quotient: CrtQuotient
    src_rows: tuple = static_field()
    dst_rows: tuple = static_field()


def make_exact_conv(primes: Sequence[int], src_rows: Sequence[int], dst_rows: Sequence[int]) -> ExactConv:
    """Tables converting from rows ``src_rows`` to ``dst_rows`` of the prime list ``primes``."""
    src = [int(primes[r]) for r in src_rows]
    dst = [int(primes[r]) for r in dst_rows]
    prod = math.prod(src)
    return ExactConv(table=make_bconv_table(src, dst), src_prod=device_u32([prod % p for p in dst]),
                     quotient=make_crt_quotient(src), src_rows=tuple(int(r) for r in src_rows),
                     dst_rows=tuple(int(r) for r in dst_rows))


def crt_centered(res, primes: Sequence[int]) -> np.ndarray:
    """Exact CRT on the host: residues [..., L, N] (any integer dtype, or Python ints) mod
    ``primes`` -> the centered integers in (-Q/2, Q/2] as a numpy object array [..., N]."""
    big_q = math.prod(int(q) for q in primes)
    res = np.asarray(res)
    acc = np.zeros(res.shape[:-2] + res.shape[-1:], dtype=object)
    for j, q in enumerate(primes):
        q = int(q)
        qhat = big_q // q
        inv = pow(qhat % q, -1, q)
        limb = res[..., j, :]
        if limb.dtype != object and q < 1 << 32:  # residues < 2^32: the product fits 64 bits
            y = (limb.astype(np.uint64) % np.uint64(q)) * np.uint64(inv) % np.uint64(q)
        else:
            y = limb.astype(object) * inv % q
        acc = acc + y.astype(object) * qhat
    acc = acc % big_q
    return np.where(acc > big_q // 2, acc - big_q, acc)
