"""Working with a plaintext modulus t (BFV, BGV): centered lifts of residues mod t onto RNS rows,
products by constants mod t, and the t-correction of an exact division.

The t-correction. Dividing y by D (a product of primes) with rounding, y' = (y - [y]_D) / D, is
what ModDown (D = P) and modulus switching (D = the dropped primes) compute. It keeps the
phase up to a small rounding error, which BGV cannot afford: its phase is m + t e, and the
error must stay a multiple of t. So BGV subtracts instead

    delta = [y]_D + D u,   u = [-[y]_D D^-1]_t  (centered, |u| <= t/2),

which is y mod D and 0 mod t: D y' = y - delta = y (mod t), so the phase of y' is D^-1 times
the phase of y, mod t, and the new error (delta_0 + delta_1 s) / D is t times something small
(|delta / D| <= 1/2 + t/2 per coefficient). Where the division follows a multiplication by D
(ModDown after a key product P x s'), the factor D^-1 cancels.

Everything here is uint32 and jittable; t must be a prime below every prime of the rows it is
lifted to (so that a residue mod t is already reduced mod q).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import ops
from ..rns.context import RNSContext
from ..rns.crt import ExactConv, make_exact_conv
from ..rns.primes import is_prime
from ..rns.pytree import HostTable, host_u32, pytree_dataclass, static_field
from ..rns.shoup import shoup


def check_plain_modulus(t, primes: Sequence[int], what: str = "plain_modulus") -> int:
    """``t`` as an int: a prime below 2^31 and below every prime of ``primes`` (TypeError /
    ValueError otherwise)."""
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
        raise TypeError(f"{what}: the plaintext modulus must be an int, got {t!r}")
    t = int(t)
    if not 2 < t < 1 << 31 or not is_prime(t):
        raise ValueError(f"{what}: the plaintext modulus t = {t} must be an odd prime below 2^31")
    small = [int(q) for q in primes if int(q) <= t]
    if small:
        raise ValueError(f"{what}: the plaintext modulus t = {t} must be below every ciphertext prime; "
                         f"{small[:3]} are not above it")
    return t


def const_mod_t(c: int, t: int) -> HostTable:
    """The table of :func:`mul_const_t` for the constant c: uint32[3, 1] = (t, c mod t, Shoup)."""
    c = int(c) % int(t)
    return host_u32([[int(t)], [c], [int(shoup([c], [int(t)])[0])]])


def mul_const_t(x, table) -> jax.Array:
    """x * c mod t for x: uint32[..., N] (any values below 2^32) and ``table`` =
    :func:`const_mod_t` (c, t): uint32[..., N] in [0, t)."""
    return ops.mul_shoup(jnp.expand_dims(x, -2), table)[..., 0, :]


def lift_centered(u, t: int, moduli) -> jax.Array:
    """Residues u in [0, t): uint32[..., N] -> the centered integers [u]_t in (-t/2, t/2] modulo
    each of ``moduli`` (uint32[L], every one above t): uint32[..., L, N]."""
    u = jnp.expand_dims(u, -2)
    q = jnp.asarray(moduli)[:, None]
    shape = u.shape[:-2] + (q.shape[0], u.shape[-1])
    return jnp.where(u > jnp.uint32(int(t) // 2), u + (q - jnp.uint32(t)), jnp.broadcast_to(u, shape))


@pytree_dataclass
class PlainCorrection:
    """Tables of the t-correction of a division by D (the product of the primes of
    ``drop_rows``) onto ``rows``.

    to_t:      centered conversion of the dropped limbs to t (the same quotient as the
               conversion onto ``rows``, so both see the same representative [y]_D).
    neg_d_inv: uint32[3, 1], the :func:`const_mod_t` table of -D^-1 mod t.
    d_mod:     uint32[L]  D mod each prime of ``rows``.
    moduli:    uint32[L]  the primes of ``rows``.
    Static: ``t``, ``drop_rows``, ``rows``.
    """

    to_t: ExactConv
    neg_d_inv: HostTable = static_field()
    d_mod: HostTable = static_field()
    moduli: HostTable = static_field()
    t: int = static_field()
    drop_rows: tuple = static_field()
    rows: tuple = static_field()


def make_plain_correction(primes: Sequence[int], drop_rows: Sequence[int], rows: Sequence[int],
                          t: int) -> PlainCorrection:
    """The t-correction of dividing data on ``drop_rows + rows`` of ``primes`` by the product of
    the ``drop_rows`` primes, onto ``rows``."""
    primes = tuple(int(q) for q in primes)
    drop_rows, rows = tuple(int(r) for r in drop_rows), tuple(int(r) for r in rows)
    t = check_plain_modulus(t, [primes[r] for r in drop_rows + rows])
    big_d = math.prod(primes[r] for r in drop_rows)
    return PlainCorrection(to_t=make_exact_conv(primes + (t,), drop_rows, (len(primes),)),
                           neg_d_inv=const_mod_t(-pow(big_d, -1, t), t),
                           d_mod=host_u32([big_d % primes[r] for r in rows]),
                           moduli=host_u32([primes[r] for r in rows]), t=t, drop_rows=drop_rows, rows=rows)


def correct(conv, dropped, corr: PlainCorrection, ring: RNSContext) -> jax.Array:
    """The t-corrected representative delta = [y]_D + D u on ``corr.rows``.

    conv:    uint32[..., L, N], [y]_D on ``corr.rows`` (the centered conversion of ``dropped``,
             coefficient domain, :func:`jax_fhe.ops.exact_conv`).
    dropped: uint32[..., |D|, N], y's limbs on ``corr.drop_rows`` (coefficient domain).
    Returns uint32[..., L, N] (coefficient domain); dividing with it instead of ``conv`` keeps
    the phase mod t."""
    yt = ops.exact_conv(dropped, corr.to_t)[..., 0, :]                # [y]_D mod t
    u = lift_centered(mul_const_t(yt, corr.neg_d_inv), corr.t, corr.moduli)
    return ops.add_mod(conv, ops.mul_limb_consts(u, corr.d_mod, ring, corr.rows), ring, corr.rows)
