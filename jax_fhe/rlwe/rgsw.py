"""RGSW ciphertexts, the external product RGSW x RLWE -> RLWE, and CMUX.

An RGSW encryption of a small polynomial m under s, for the gadget (1, B, ..., B^(len-1)) of
:mod:`.gadget`, is 2 len RLWE rows (NTT domain, phase b + a s):

    rows[0, j]: phase m B^j + e          (multiplies the b-part, c0, of an RLWE input)
    rows[1, j]: phase m B^j s + e        (multiplies the a-part, c1)

i.e. rows[i, j] has phase m B^j s^i. The external product with ct = (b, a) decomposes b and a
into digits and sums d^b_j rows[0, j] + d^a_j rows[1, j]: the phase becomes m (b + a s) +
sum_j d_j e_j, so the input
noise is multiplied by m (a bit: unchanged) and the added noise is bounded by the digit size
B/2 times the row noise, over 2 len N terms.

``from_rlwe`` builds RGSW(m) from the len RLWE rows of phase m B^j alone (what PIR query
expansion produces): the missing rows m B^j s are external products of those rows with an
RGSW encryption of s (the "conversion key", OnionPIR's method).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from ..ops import add_mod, intt, mul_mod, sub_mod
from ..rns import HostRandom, RNSContext
from ..rns.pytree import pytree_dataclass
from .gadget import Gadget, decompose_ntt, gadget_product, gadget_rows


@pytree_dataclass
class RGSWCiphertext:
    """``rows``: uint32[..., 2, len, 2, L, N] (NTT domain); see the module docstring."""

    rows: jax.Array

    def __repr__(self) -> str:
        return f"RGSWCiphertext(shape={tuple(self.rows.shape)})"


def encrypt(s_ntt, m_ntt, gadget: Gadget, ctx: RNSContext, rng: HostRandom, sigma: float = 3.2,
            tail: float = 6.0) -> RGSWCiphertext:
    """RGSW encryption of NTT-domain messages ``m_ntt`` uint32[..., L, N] under ``s_ntt``."""
    m_ntt = jnp.asarray(m_ntt)
    ms = mul_mod(m_ntt, jnp.broadcast_to(s_ntt, m_ntt.shape), ctx)
    rows_s = gadget_rows(s_ntt, ms, gadget, ctx, rng, sigma, tail)      # sampled first (as always)
    rows = jnp.stack([gadget_rows(s_ntt, m_ntt, gadget, ctx, rng, sigma, tail), rows_s], axis=-5)
    return RGSWCiphertext(rows=rows)


def external_product(sel: RGSWCiphertext, ct: jax.Array, gadget: Gadget, ctx: RNSContext) -> jax.Array:
    """RGSW(m) x RLWE(phase phi) -> RLWE(phase m phi + noise); ct: uint32[..., 2, L, N] NTT domain.

    Leading batch axes of ``sel.rows`` (before the last five) and of ``ct`` (before the last
    three) broadcast against each other."""
    if not isinstance(sel, RGSWCiphertext):
        raise TypeError(f"external_product: expected an RGSWCiphertext, got {type(sel).__name__}")
    ct = jnp.asarray(ct)
    length = gadget.length
    want = (2, length, 2) + ct.shape[-2:]
    if sel.rows.shape[-5:] != want or ct.ndim < 3 or ct.shape[-3] != 2:
        raise ValueError(f"external_product: RGSW rows {sel.rows.shape} and ciphertext {ct.shape} "
                         f"do not match (want rows [..., {', '.join(map(str, want))}] and ct [..., 2, L, N])")
    digits = decompose_ntt(intt(ct, ctx), gadget, ctx)                # [..., 2, len, L, N]
    digits = digits.reshape(digits.shape[:-4] + (2 * length,) + digits.shape[-2:])
    rows = sel.rows.reshape(sel.rows.shape[:-5] + (2 * length,) + sel.rows.shape[-3:])
    return gadget_product(digits, rows, ctx)


def cmux(sel: RGSWCiphertext, ct0: jax.Array, ct1: jax.Array, gadget: Gadget, ctx: RNSContext) -> jax.Array:
    """ct0 + RGSW(bit) x (ct1 - ct0): selects ct1 when bit = 1, ct0 when bit = 0."""
    diff = external_product(sel, sub_mod(ct1, ct0, ctx), gadget, ctx)
    return add_mod(ct0, diff, ctx)


def from_rlwe(rows_b: jax.Array, conversion_key: RGSWCiphertext, key_gadget: Gadget,
              ctx: RNSContext) -> RGSWCiphertext:
    """RGSW(m) from ``rows_b``: uint32[..., len, 2, L, N], the RLWE rows of phase m B^j for the
    RGSW gadget (any base and length).

    ``conversion_key`` is RGSW(s) under ``key_gadget`` (``encrypt(s, s, key_gadget, ...)``);
    the rows of phase m B^j s are its external products with ``rows_b``, which adds s times
    the noise of ``rows_b`` plus one external-product noise."""
    rows_b = jnp.asarray(rows_b)
    if rows_b.ndim < 4 or rows_b.shape[-3] != 2:
        raise ValueError(f"from_rlwe: rows_b must be uint32[..., len, 2, L, N], got {rows_b.shape}")
    rows_a = external_product(conversion_key, rows_b, key_gadget, ctx)
    return RGSWCiphertext(rows=jnp.stack([rows_b, rows_a], axis=-5))
