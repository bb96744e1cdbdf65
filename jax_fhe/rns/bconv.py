"""Base-conversion tables (fast basis extension, Theodosian's overflow-free form).

Converting x, given by residues x_j mod q_j (j < Lin), to a basis {p_i} (i < Lout):

    out_i = sum_j [x_j * (Q/q_j)^-1]_{q_j} * (Q/q_j)   mod p_i,      Q = prod_j q_j.

This equals (x + u Q) mod p_i for some 0 <= u < Lin (the usual approximate conversion). The
kernel accumulates the sum in 64 bits; when sum_j T[i][j] * q_j < 2^64 for every output i
(T[i][j] = (Q/q_j) mod p_i) it never reduces in between (overflow-free, Theodosian §III-C).
Otherwise the table records how many terms may be summed between reductions.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .pytree import HostTable, host_u32, pytree_dataclass, static_field
from .primes import is_prime
from .shoup import shoup

_U64 = 1 << 64


@pytree_dataclass
class BConvTable:
    """Device tables of one conversion.

    in_consts:  uint32[3, Lin]  q_j, (Q/q_j)^-1 mod q_j, its Shoup companion
    mat:        uint32[Lout, Lin]  (Q/q_j) mod p_i
    out_consts: uint32[4, Lout] p_i, 2^32 mod p_i, Shoup(2^32 mod p_i), Shoup(1)
    Static: ``src`` and ``dst`` primes; ``fold_every`` (terms between 64-bit reductions; equal
    to Lin when the conversion is overflow-free); ``sum_room``: the largest K with
    sum_j mat[i][j] q_j + K p_i < 2^64 for every row (0 if none), i.e. how many multiples of
    p_i an overflow-free conversion's unreduced sum can still take (the centered CUDA kernel
    adds its quotient correction there).
    """

    in_consts: HostTable = static_field()
    mat: HostTable = static_field()
    out_consts: HostTable = static_field()
    src: tuple = static_field()
    dst: tuple = static_field()
    fold_every: int = static_field()
    sum_room: int = static_field(default=0)

    @property
    def overflow_free(self) -> bool:
        """Whether every output row's sum fits 64 bits without intermediate folding
        (sum_j T[i][j] q_j < 2^64)."""
        return self.fold_every >= len(self.src)

    def __repr__(self) -> str:
        kind = "overflow-free" if self.overflow_free else f"reduce every {self.fold_every} terms"
        return f"BConvTable({len(self.src)} -> {len(self.dst)} limbs, {kind})"


def _check_primes(ps: Sequence[int], what: str) -> tuple[int, ...]:
    ps = tuple(int(p) for p in ps)
    if not ps:
        raise ValueError(f"{what} basis is empty")
    for p in ps:
        if not (2 < p < (1 << 31)) or not is_prime(p):
            raise ValueError(f"{what} modulus {p} is not a prime below 2^31")
    return ps


def fold_interval(mat: Sequence[Sequence[int]], src: Sequence[int], dst: Sequence[int]) -> int:
    """Largest g such that any g consecutive terms, added to a reduced accumulator (< p_i),
    stay below 2^64 for every output row. Returns len(src) when no reduction is ever needed."""
    lin = len(src)
    if all(sum(t * q for t, q in zip(row, src)) < _U64 for row in mat):
        return lin
    prefix = []
    for row in mat:
        acc = [0]
        for t, q in zip(row, src):
            acc.append(acc[-1] + t * q)
        prefix.append(acc)
    for g in range(lin - 1, 1, -1):
        if all(p + pre[min(j0 + g, lin)] - pre[j0] < _U64
               for pre, p in zip(prefix, dst) for j0 in range(lin)):
            return g
    return 1


def make_bconv_table(src: Sequence[int], dst: Sequence[int]) -> BConvTable:
    """Tables converting from basis ``src`` (pairwise distinct primes) to basis ``dst``."""
    src = _check_primes(src, "source")
    dst = _check_primes(dst, "target")
    if len(set(src)) != len(src):
        raise ValueError("source basis primes must be distinct")
    if len(src) > 64:
        raise ValueError(f"base conversion supports at most 64 source limbs, got {len(src)}")
    big_q = math.prod(src)
    qhat = [big_q // q for q in src]
    qhat_inv = [pow(h % q, -1, q) for h, q in zip(qhat, src)]
    mat = [[h % p for h in qhat] for p in dst]
    r32 = [(1 << 32) % p for p in dst]
    in_c = np.array([src, qhat_inv, shoup(qhat_inv, src)], dtype=np.uint32)
    out_c = np.array([dst, r32, shoup(r32, dst), shoup([1] * len(dst), dst)], dtype=np.uint32)
    return BConvTable(
        in_consts=host_u32(in_c),
        mat=host_u32(np.array(mat, dtype=np.uint64).reshape(len(dst), len(src))),
        out_consts=host_u32(out_c),
        src=src,
        dst=dst,
        fold_every=fold_interval(mat, src, dst),
        sum_room=max(0, min((_U64 - 1 - sum(t * q for t, q in zip(row, src))) // p
                            for row, p in zip(mat, dst))),
    )
