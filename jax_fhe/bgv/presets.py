"""Named BGV parameter sets (the primes of the BFV presets of the same name).

| name      | N    | t      | q primes     | level 0 / step | levels | p primes    | log2 PQ | security   |
|-----------|------|--------|--------------|----------------|--------|-------------|---------|------------|
| "cat-n15" | 2^15 | 786433 | 24 x 30 bits | 2 / 2 primes   | 0..11  | 5 x 31 bits | ~875    | 128-bit    |
| "n14"     | 2^14 | 65537  | 11 x 30 bits | 1 / 2 primes   | 0..5   | 3 x 31 bits | ~423    | 128-bit    |
| "toy-n12" | 2^12 | 65537  | 6 x 30 bits  | 1 / 1 prime    | 0..5   | 2 x 31 bits | ~242    | INSECURE   |
| "toy-n10" | 2^10 | 12289  | 18 x 25 bits | 2 / 2 primes   | 0..8   | 3 x 26 bits | ~528    | INSECURE   |

A level must divide the noise of a product back below the modulus-switching noise. After a
switch the noise is about t sqrt(N / 18) per coefficient (the rounding delta_0 + delta_1 s); a
product of two such is about sqrt(2 N w) times its square (w, the secret's peak over its mean,
is 7 to 34), so a level must drop about log2(t) + log2(N) + 6 bits: 35 bits at t = 65537,
N = 2^12 (one 30-bit prime is just enough: the bound of :mod:`.noise` stays put; measured, the
noise after a switch stays at 2^21.8 with 3 bits to spare), 42 at N = 2^14 and 47 at CAT's
t = 786433, N = 2^15: two 30-bit primes there (with one, the bound's noise after a switch
grows from level to level instead of returning to a fixed size). SEAL's BGV drops one ~55-bit
prime per level, about the same. "toy-n10" (t = 12289, 25-bit primes: 37 bits needed) takes
two as well.
"""
from __future__ import annotations

import functools

from ..bfv.presets import chain
from .params import BGVParams


def _make(name, log_n, t, num_q, q_bits, num_p, p_bits, alpha, per_level, bottom, insecure=False) -> BGVParams:
    """Level 0 has the first ``bottom`` primes, each level above ``per_level`` more."""
    q, p = chain(log_n, num_q, q_bits, num_p, p_bits)
    levels = tuple(tuple(range(k)) for k in range(bottom, num_q + 1, per_level))
    return BGVParams(log_n=log_n, q_primes=q, p_primes=p, levels=levels, alpha=alpha, name=name,
                     insecure=insecure, plain_modulus=t)


@functools.lru_cache(maxsize=None)
def bgv_cat_n15() -> BGVParams:
    """CAT's reference point: N = 2^15, 128-bit, t = 786433, two primes per level."""
    return _make("cat-n15", 15, 786433, 24, 30, 5, 31, 5, 2, 2)


@functools.lru_cache(maxsize=None)
def bgv_n14() -> BGVParams:
    """A smaller secure set: N = 2^14, t = 65537, one prime per level."""
    return _make("n14", 14, 65537, 11, 30, 3, 31, 3, 2, 1)


@functools.lru_cache(maxsize=None)
def toy_n12() -> BGVParams:
    """INSECURE test set: N = 2^12, t = 65537."""
    return _make("toy-n12", 12, 65537, 6, 30, 2, 31, 2, 1, 1, insecure=True)


@functools.lru_cache(maxsize=None)
def toy_n10() -> BGVParams:
    """INSECURE test set: N = 2^10, t = 12289, 18 levels of one 25-bit prime."""
    return _make("toy-n10", 10, 12289, 18, 25, 3, 26, 3, 2, 2, insecure=True)


PRESETS = {"cat-n15": bgv_cat_n15, "n14": bgv_n14, "toy-n12": toy_n12, "toy-n10": toy_n10}


def preset(name: str) -> BGVParams:
    """The BGV parameter set called ``name`` (one of :data:`PRESETS`)."""
    try:
        return PRESETS[name]()
    except KeyError:
        raise ValueError(f"unknown BGV preset {name!r}; known: {sorted(PRESETS)}") from None
