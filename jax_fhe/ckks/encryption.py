"""Encryption (public or secret key) and decryption.

Encryption samples on the host (HostRandom), so it is not jitted; everything after it is.
Public-key encryption works in QP (the level's primes and the special primes P) and divides by P
(ModDown): (v b + e0 + P m, v a + e1) / P. The noise v e + e0 + e1 s of a dense ternary v is
divided by P and vanishes; what remains is ModDown's rounding, eps0 + eps1 s with |eps| <= 1/2
(std ~ sqrt(h / 12), 52 at h = 2^15), against e (sigma = 3.2) for secret-key encryption
(-a s + e + m, a). Without the P detour the noise was ~2^9.9, about 8 bits of precision lost at
N = 2^16 instead of ~4 (docs/ckks-parameters.md).
"""
from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from .. import ops
from ..ops._checks import take_static
from ..rlwe.hybrid import mod_down
from ..rns.sampling import to_residues
from ..rns.shoup import device_u32
from .context import CKKSContext, check_context
from .keys import NOISE_TAIL, PublicKey, SecretKey, _rng
from .types import Ciphertext, Plaintext, check_data


def _noise(rng, shape, p, primes, ctx, rows):
    e = rng.gaussian(shape, p.sigma, NOISE_TAIL)
    return ops.ntt(jnp.asarray(to_residues(e, primes)), ctx.ring, rows)


def encrypt(pt: Plaintext, ctx: CKKSContext, key, rng=None) -> Ciphertext:
    """Encrypt a plaintext (any batch shape) under a :class:`PublicKey` or a
    :class:`SecretKey`. ``rng``: HostRandom (None: os.urandom)."""
    ctx = check_context(ctx, "encrypt")
    if not isinstance(pt, Plaintext):
        raise TypeError(f"encrypt: expected a Plaintext, got {type(pt).__name__}")
    p = ctx.params
    if pt.params != p or getattr(key, "params", None) != p:
        raise ValueError(f"encrypt: plaintext ({pt.params.name!r}), key and context ({p.name!r}) "
                         "must use the same parameter set")
    check_data(pt.data, p, pt.level, (), "encrypt")
    rng = _rng(rng)
    rows, primes = p.rows(pt.level), p.primes(pt.level)
    batch = tuple(pt.data.shape[:-2])
    shape = batch + (p.n,)
    if isinstance(key, PublicKey):
        tables = ctx.keyswitch_tables(pt.level)
        ext_rows, ext_primes = tables.ext_rows, tuple(p.all_primes[r] for r in tables.ext_rows)
        ext_shape = batch + (len(ext_rows), p.n)
        v = rng.ternary(shape)
        v = ops.ntt(jnp.asarray(to_residues(v, ext_primes)), ctx.ring, ext_rows)
        pk = take_static(key.data, ext_rows, -2, max_runs=1)
        full = lambda x: jnp.broadcast_to(x, ext_shape)  # noqa: E731
        b = ops.add_mod(ops.mul_mod(v, full(pk[0]), ctx.ring, ext_rows),
                        _noise(rng, shape, p, ext_primes, ctx, ext_rows), ctx.ring, ext_rows)
        a = ops.add_mod(ops.mul_mod(v, full(pk[1]), ctx.ring, ext_rows),
                        _noise(rng, shape, p, ext_primes, ctx, ext_rows), ctx.ring, ext_rows)
        # + P m on the level's rows (P m = 0 mod the special primes), then divide by P
        big_p = math.prod(p.all_primes[r] for r in tables.special_rows)
        pm = ops.mul_limb_consts(pt.data, device_u32([big_p % q for q in primes]), ctx.ring, rows)
        nl = len(rows)
        b = b.at[..., :nl, :].set(ops.add_mod(b[..., :nl, :], pm, ctx.ring, rows))
        ct = mod_down(jnp.stack([b, a], axis=-3), ctx.ring, tables)
        return Ciphertext(data=ct, level=pt.level, scale=pt.scale, slots=pt.slots, params=p)
    elif isinstance(key, SecretKey):
        a = jnp.asarray(np.moveaxis(rng.uniform_mod(primes, shape), 0, -2))
        s = jnp.broadcast_to(take_static(key.s, rows, -2, max_runs=1), a.shape)
        b = ops.sub_mod(_noise(rng, shape, p, primes, ctx, rows), ops.mul_mod(a, s, ctx.ring, rows),
                        ctx.ring, rows)
    else:
        raise TypeError(f"encrypt: key must be a PublicKey or SecretKey, got {type(key).__name__}")
    b = ops.add_mod(b, pt.data, ctx.ring, rows)
    return Ciphertext(data=jnp.stack([b, a], axis=-3), level=pt.level, scale=pt.scale,
                      slots=pt.slots, params=p)


def decrypt(ct: Ciphertext, ctx: CKKSContext, sk: SecretKey) -> Plaintext:
    """b + a s: the plaintext (jittable)."""
    ctx = check_context(ctx, "decrypt")
    if not isinstance(ct, Ciphertext):
        raise TypeError(f"decrypt: expected a Ciphertext, got {type(ct).__name__}")
    if not isinstance(sk, SecretKey):
        raise TypeError(f"decrypt: expected a SecretKey, got {type(sk).__name__}")
    p = ctx.params
    if ct.params != p or sk.params != p:
        raise ValueError(f"decrypt: ciphertext ({ct.params.name!r}), key ({sk.params.name!r}) and "
                         f"context ({p.name!r}) must use the same parameter set")
    check_data(ct.data, p, ct.level, (2,), "decrypt")
    rows = p.rows(ct.level)
    b, a = ct.data[..., 0, :, :], ct.data[..., 1, :, :]
    s = jnp.broadcast_to(take_static(sk.s, rows, -2, max_runs=1), a.shape)
    m = ops.mac_mod(b, a, s, ctx.ring, rows)
    return Plaintext(data=m, level=ct.level, scale=ct.scale, slots=ct.slots, params=p)
