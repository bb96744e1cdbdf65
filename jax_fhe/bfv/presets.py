"""Named BFV parameter sets.

| name       | N    | t      | q primes      | p primes     | dnum | log2 PQ | security           |
|------------|------|--------|---------------|--------------|------|---------|--------------------|
| "cat-n15"  | 2^15 | 786433 | 24 x 30 bits  | 5 x 31 bits  | 5    | ~875    | 128-bit (bound 881) |
| "n14"      | 2^14 | 65537  | 11 x 30 bits  | 3 x 31 bits  | 4    | ~423    | 128-bit (bound 438) |
| "toy-n12"  | 2^12 | 65537  | 6 x 30 bits   | 2 x 31 bits  | 3    | ~242    | INSECURE (tests)    |
| "toy-n10"  | 2^10 | 12289  | 18 x 25 bits  | 3 x 26 bits  | 6    | ~528    | INSECURE (tests)    |

"cat-n15" is CAT's reference point (N = 2^15, log2 of the key modulus about 881 bits, t =
786433 as in SEAL's benchmark that CAT ran; notes/cat.md), with 32-bit words: 24 primes below
2^30 for Q (SEAL has 15 of 55 bits) and hybrid key switching with 5 special primes (SEAL: one
special prime, a digit per prime). "toy-n10" has more than 16 primes in Q and in the auxiliary
basis, so that CPU tests exercise the chunked (mixed-radix) conversions that N = 2^15 needs.
The auxiliary basis B takes primes of the q size until prod(B) > 8 t N Q.
"""
from __future__ import annotations

import functools
import math

from ..rns.primes import ntt_primes
from .params import BFVParams


def chain(log_n: int, num_q: int, q_bits: int, num_p: int, p_bits: int) -> tuple:
    """(q_primes, p_primes): the largest NTT-friendly primes of ``q_bits`` and ``p_bits`` bits."""
    n = 1 << log_n
    q = ntt_primes(q_bits, num_q, n)
    p = ntt_primes(p_bits, num_p, n, exclude=q)
    return q, p


def aux_basis(log_n: int, t: int, q: tuple, exclude: tuple, bits: int) -> tuple:
    """Primes of ``bits`` bits (not in ``exclude``) until their product exceeds 8 t N Q."""
    n = 1 << log_n
    need = 3 + math.log2(t) + log_n + math.log2(math.prod(q))
    count = 1
    while True:
        aux = ntt_primes(bits, count, n, exclude=tuple(q) + tuple(exclude))
        if math.log2(math.prod(aux)) >= need:
            return aux
        count += 1


def _make(name, log_n, t, num_q, q_bits, num_p, p_bits, alpha, insecure=False) -> BFVParams:
    q, p = chain(log_n, num_q, q_bits, num_p, p_bits)
    return BFVParams(log_n=log_n, q_primes=q, p_primes=p, levels=(tuple(range(num_q)),), alpha=alpha,
                     name=name, insecure=insecure, plain_modulus=t,
                     aux_primes=aux_basis(log_n, t, q, p, q_bits))


@functools.lru_cache(maxsize=None)
def bfv_cat_n15() -> BFVParams:
    """CAT's reference point: N = 2^15, 128-bit, t = 786433."""
    return _make("cat-n15", 15, 786433, 24, 30, 5, 31, 5)


@functools.lru_cache(maxsize=None)
def bfv_n14() -> BFVParams:
    """A smaller secure set: N = 2^14, t = 65537."""
    return _make("n14", 14, 65537, 11, 30, 3, 31, 3)


@functools.lru_cache(maxsize=None)
def toy_n12() -> BFVParams:
    """INSECURE test set: N = 2^12, t = 65537."""
    return _make("toy-n12", 12, 65537, 6, 30, 2, 31, 2, insecure=True)


@functools.lru_cache(maxsize=None)
def toy_n10() -> BFVParams:
    """INSECURE test set: N = 2^10, t = 12289, 18 primes in Q (chunked conversions)."""
    return _make("toy-n10", 10, 12289, 18, 25, 3, 26, 3, insecure=True)


PRESETS = {"cat-n15": bfv_cat_n15, "n14": bfv_n14, "toy-n12": toy_n12, "toy-n10": toy_n10}


def preset(name: str) -> BFVParams:
    """The BFV parameter set called ``name`` (one of :data:`PRESETS`)."""
    try:
        return PRESETS[name]()
    except KeyError:
        raise ValueError(f"unknown BFV preset {name!r}; known: {sorted(PRESETS)}") from None
