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

import numpy as np

from .bconv import BConvTable, make_bconv_table
from .pytree import HostTable, host_u32, pytree_dataclass, static_field

MAX_TERMS = 16  # terms below 2^28 each: the sum fits in 32 bits


@pytree_dataclass
class CrtQuotient:
    """inv_fix: uint32[L] = floor(2^(32 + fix_bits) / q_l); static ``fix_bits``."""

    inv_fix: HostTable = static_field()
    fix_bits: int = static_field()


def quotient_fix_bits(primes: Sequence[int]) -> int:
    """F, the fixed-point precision of the CRT quotient of ``primes`` (its rounding is within
    2 L 2^-F of the exact fraction)."""
    return min(28, min(int(q).bit_length() for q in primes) - 1)


def make_crt_quotient(primes: Sequence[int]) -> CrtQuotient:
    """The fixed-point tables of round(sum_l y_l / q_l) for ``primes`` (1 to 16 of them):
    :class:`CrtQuotient`, used by :func:`jax_fhe.ops.rounded_quotient` and the centered conversion."""
    primes = [int(q) for q in primes]
    if not 1 <= len(primes) <= MAX_TERMS:
        raise ValueError(f"the fixed-point CRT quotient needs 1..{MAX_TERMS} primes, got {len(primes)}")
    fix = quotient_fix_bits(primes)
    return CrtQuotient(inv_fix=host_u32([(1 << (32 + fix)) // q for q in primes]), fix_bits=fix)


@pytree_dataclass
class ExactConv:
    """Tables of a centered base conversion from rows ``src_rows`` to rows ``dst_rows`` of a
    prime list (:func:`jax_fhe.ops.exact_conv` computes it).

    table:    the :class:`BConvTable` of the fast conversion.
    src_prod: uint32[Lout]  (prod of the source primes) mod each target prime.
    quotient: the fixed-point CRT quotient of the source primes.
    """

    table: BConvTable
    src_prod: HostTable = static_field()
    quotient: CrtQuotient
    src_rows: tuple = static_field()
    dst_rows: tuple = static_field()


def make_exact_conv(primes: Sequence[int], src_rows: Sequence[int], dst_rows: Sequence[int]) -> ExactConv:
    """Tables converting from rows ``src_rows`` to ``dst_rows`` of the prime list ``primes``."""
    src = [int(primes[r]) for r in src_rows]
    dst = [int(primes[r]) for r in dst_rows]
    prod = math.prod(src)
    return ExactConv(table=make_bconv_table(src, dst), src_prod=host_u32([prod % p for p in dst]),
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


def crt_centered_float(res, primes: Sequence[int]) -> np.ndarray:
    """The centered CRT integers of :func:`crt_centered` as float64[..., N], without big
    integers: balanced mixed-radix digits (Garner's algorithm in int64, vectorized over the
    coefficients; primes below 2^31), then Horner's rule in float64 from the top digit. Exact
    where the integer is below 2^53 in magnitude, else within a relative 2^-52 L; a value beyond
    the float range comes out infinite."""
    qs = [int(q) for q in primes]
    if max(qs) >= 1 << 31:        # the products below must stay within int64
        return crt_centered(res, qs).astype(np.float64)
    res = np.asarray(res)
    digits, prefix = [], 1
    for j, q in enumerate(qs):
        s = np.zeros(res.shape[:-2] + res.shape[-1:], dtype=np.int64)   # the digits so far, mod q
        for i in range(j - 1, -1, -1):
            s = (s * (qs[i] % q) + digits[i]) % q
        inv = pow(prefix % q, -1, q)
        d = (res[..., j, :].astype(np.int64) - s) % q * inv % q
        digits.append(np.where(d > q // 2, d - q, d))                 # balanced: (-q/2, q/2]
        prefix *= q
    with np.errstate(over="ignore", invalid="ignore"):
        x = digits[-1].astype(np.float64)
        for j in range(len(qs) - 2, -1, -1):
            x = x * qs[j] + digits[j]
    return x


@pytree_dataclass
class MixedRadixConv:
    """Tables of a centered conversion from more source primes than one
    :class:`ExactConv` takes (:func:`jax_fhe.ops.mixed_radix_conv` computes it).

    The source rows are split into k chunks C_0..C_{k-1} of at most ``MAX_TERMS`` primes
    (products Q_0..Q_{k-1}). x is written in mixed radix, x = y_0 + Q_0 y_1 + Q_0 Q_1 y_2 + ...,
    each digit y_j centered in its chunk: y_j = [r_j]_{Q_j} with r_0 = x and
    r_{j+1} = (r_j - y_j) / Q_j on the later chunks' primes. The digits are converted exactly
    (one :class:`ExactConv` per chunk) and summed on the target primes.

    chunks: one :class:`ExactConv` per chunk: C_j -> (rows of C_{j+1..k-1}) + target rows.
    inv:    per chunk j < k - 1: uint32[3, |C_{j+1..}|] = (prime, Q_j^-1 mod it, its Shoup
            companion) for the later chunks' primes.
    scale:  per chunk j: uint32[3, Lout] = (target prime, Q_0..Q_{j-1} mod it, Shoup companion).
    Static: ``src_rows``, ``dst_rows``.
    """

    chunks: tuple
    inv: tuple = static_field()      # of HostTable
    scale: tuple = static_field()    # of HostTable
    src_rows: tuple = static_field()
    dst_rows: tuple = static_field()


def make_mixed_radix_conv(primes: Sequence[int], src_rows: Sequence[int], dst_rows: Sequence[int],
                          chunk: int = MAX_TERMS) -> MixedRadixConv:
    """Tables converting from rows ``src_rows`` to ``dst_rows`` of the prime list ``primes``
    through chunks of at most ``chunk`` source primes (balanced: sizes differ by at most one)."""
    from .shoup import shoup

    src_rows, dst_rows = tuple(int(r) for r in src_rows), tuple(int(r) for r in dst_rows)
    if not src_rows or not dst_rows:
        raise ValueError("make_mixed_radix_conv: the source and target rows must be non-empty")
    if not 1 <= int(chunk) <= MAX_TERMS:
        raise ValueError(f"make_mixed_radix_conv: chunk must be in [1, {MAX_TERMS}], got {chunk}")
    k = -(-len(src_rows) // int(chunk))
    sizes = [len(src_rows) // k + (1 if j < len(src_rows) % k else 0) for j in range(k)]
    bounds = [sum(sizes[:j]) for j in range(k + 1)]
    parts = [src_rows[bounds[j]:bounds[j + 1]] for j in range(k)]
    dst = [int(primes[r]) for r in dst_rows]
    chunks, inv, scale = [], [], []
    below = 1  # Q_0 ... Q_{j-1}
    for j, part in enumerate(parts):
        later = src_rows[bounds[j + 1]:]
        chunks.append(make_exact_conv(primes, part, later + dst_rows))
        qj = math.prod(int(primes[r]) for r in part)
        if later:
            ps = [int(primes[r]) for r in later]
            w = [pow(qj, -1, p) for p in ps]
            inv.append(host_u32(np.stack([np.asarray(ps, np.uint64), np.asarray(w, np.uint64),
                                            shoup(w, ps).astype(np.uint64)])))
        w = [below % p for p in dst]
        scale.append(host_u32(np.stack([np.asarray(dst, np.uint64), np.asarray(w, np.uint64),
                                          shoup(w, dst).astype(np.uint64)])))
        below *= qj
    return MixedRadixConv(chunks=tuple(chunks), inv=tuple(inv), scale=tuple(scale), src_rows=src_rows,
                          dst_rows=dst_rows)
