"""Automorphisms X -> X^g of ciphertexts, with "key switch first" Galois keys, and hoisting.

The key for g switches s into a form under sigma_g^-1(s) (Cheddar's convention), so that

    sigma_g(c0, c1) = sigma_g((c0, 0) + key_switch(c1))

i.e. the key switch runs *before* the automorphism, on c1 itself. Several automorphisms of
one ciphertext then share the decomposition (ModUp) of c1: :func:`apply_galois_hoisted`.
Everything is in the NTT domain, where sigma_g is a slot permutation
(:func:`jax_fhe.ops.automorphism_ntt`). CKKS slot rotations by r use g = 5^r mod 2N,
conjugation g = 2N - 1 (:func:`jax_fhe.ops.galois_element`).
"""
from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

from .. import ops
from ..rns.context import RNSContext
from . import keyswitch
from .encryption import NOISE_TAIL


def gen_galois_key(method, ring: RNSContext, s, galois: int, *, num_q: int, alpha: int,
                   sigma: float, rng, tail: float = NOISE_TAIL, tables=None, error_factor: int = 1,
                   a_seed: bytes | None = None, **options):
    """A key-switch-first key for X -> X^galois: switches s (NTT-domain uint32[T, N] over every
    row of ``ring``) into a form under sigma^-1(s). ``method``: a name or names, and
    ``error_factor``, ``a_seed`` and ``options``, as :func:`jax_fhe.rlwe.keyswitch.gen_key` takes them."""
    g_inv = pow(int(galois), -1, 2 * ring.n)
    return keyswitch.gen_key(method, ring, s, ops.automorphism_ntt(s, g_inv), num_q=num_q, alpha=alpha,
                             sigma=sigma, rng=rng, tail=tail, tables=tables, error_factor=error_factor,
                             a_seed=a_seed, **options)


def _finish(data, u, galois: int, ring: RNSContext, rows) -> jax.Array:
    """sigma_galois((c0 + u0, u1)), the sum never written (:func:`jax_fhe.ops.automorphism_ntt_add`)."""
    c0 = data[..., 0, :, :]
    lead = jnp.broadcast_shapes(c0.shape[:-2], u.shape[:-3])
    u = jnp.broadcast_to(u, lead + u.shape[-3:])
    if c0.shape[:-2] not in ((), lead):
        c0 = jnp.broadcast_to(c0, lead + c0.shape[-2:])
    return ops.automorphism_ntt_add(u, c0, galois, ring, rows)


def apply_galois(data, galois: int, key, ring: RNSContext, tables) -> jax.Array:
    """sigma_galois of NTT-domain ciphertexts uint32[..., 2, L, N] on ``tables.rows`` with a
    key-switch-first key (:func:`gen_galois_key`)."""
    u = keyswitch.key_switch(data[..., 1, :, :], key, ring, tables)
    return _finish(data, u, galois, ring, tables.rows)


def apply_galois_hoisted(data, galois_keys: Sequence, ring: RNSContext, tables) -> list:
    """[apply_galois(data, g, key) for (g, key) in galois_keys] with one shared decomposition
    of c1 (hoisting: one ModUp for all of them)."""
    if not galois_keys:
        return []
    c1 = data[..., 1, :, :]
    dec = keyswitch.decompose(c1, ring, tables)
    return [_finish(data, keyswitch.key_switch_decomposed(c1, dec, key, ring, tables), g, ring, tables.rows)
            for g, key in galois_keys]
