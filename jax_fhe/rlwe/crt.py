"""The CRT quotient round(sum_l y_l / q_l) in 32-bit fixed point, shared by the gadget
decomposition and the centered base conversion of hybrid key switching.

With y_l = [x (Q/q_l)^-1]_{q_l}, x = sum_l y_l (Q/q_l) - v Q where v = floor(sum_l y_l / q_l);
rounding instead of flooring gives the centered representative. Each term is y_l * 2^F / q_l as
``mulhi(y_l, floor(2^(32+F) / q_l))`` with F = min(28, bits(min q) - 1), so the reciprocals fit a
word, each term is off by less than 2 units of 2^-F, and up to 16 terms sum within a word.
Integer arithmetic makes the result identical on every backend; it can differ from the exact
rounding only when the fraction is within 2 L 2^-F of 1/2.
"""
from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax import lax

from ..rns._pytree import pytree_dataclass, static_field
from ..rns.shoup import device_u32

MAX_TERMS = 16  # terms below 2^28 each: the sum fits in 32 bits


@pytree_dataclass
class CrtQuotient:
    """inv_fix: uint32[L] = floor(2^(32 + fix_bits) / q_l); static ``fix_bits``."""

    inv_fix: jax.Array
    fix_bits: int = static_field()


def make_crt_quotient(primes: Sequence[int]) -> CrtQuotient:
    primes = [int(q) for q in primes]
    if not 1 <= len(primes) <= MAX_TERMS:
        raise ValueError(f"the fixed-point CRT quotient needs 1..{MAX_TERMS} primes, got {len(primes)}")
    fix = min(28, min(q.bit_length() for q in primes) - 1)
    return CrtQuotient(inv_fix=device_u32([(1 << (32 + fix)) // q for q in primes]), fix_bits=fix)


def rounded_quotient(y: jax.Array, cq: CrtQuotient) -> jax.Array:
    """y: uint32[..., L, N] (y_l < q_l). Returns uint32[..., N]: round(sum_l y_l / q_l), in [0, L]."""
    terms = lax.mulhi(y, jnp.broadcast_to(cq.inv_fix[:, None], y.shape))
    frac = jnp.sum(terms, axis=-2, dtype=jnp.uint32)
    return (frac + jnp.uint32(1 << (cq.fix_bits - 1))) >> cq.fix_bits
