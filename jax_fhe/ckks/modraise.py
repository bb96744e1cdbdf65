"""Scheme operations that bootstrapping needs beyond the evaluator: ModRaise and switching a
ciphertext to another secret.

ModRaise. A ciphertext at a low level (modulus q) has phase m + e. Lifting each coefficient of
c0 and c1 to its centered representative in (-q/2, q/2] and reading it modulo a larger modulus Q
gives a ciphertext at a higher level whose phase is m + e + q I for a small integer polynomial I
(|I| <= (1 + ||s||_1) / 2; with a sparse secret of Hamming weight h, typically a few units).
Bootstrapping then removes q I homomorphically (CoeffToSlot, EvalMod, SlotToCoeff). The lift is
one centered base conversion (:func:`jax_fhe.ops.exact_conv`) from the low level's primes to the
other primes of the high level, between an inverse and a forward NTT.

Secret switching. :func:`switch_key` moves a ciphertext from the secret a key was made from to
the one it was made for (dense <-> sparse in the sparse-secret encapsulation of bootstrapping),
through :mod:`jax_fhe.rlwe.keyswitch` with the context's tables or explicit ones (e.g. tables
with fewer special primes, for a key whose modulus must stay small).
"""
from __future__ import annotations

import jax.numpy as jnp

from .. import ops
from ..rlwe import keyswitch
from ..rns.crt import ExactConv, make_exact_conv
from ..rns.pytree import pytree_dataclass, static_field
from .context import CKKSContext, check_context
from .evaluator import check_ct
from .params import CKKSParams
from .types import Ciphertext


@pytree_dataclass
class ModRaiseTables:
    """The centered conversion from the rows of ``low`` to the rows of ``high`` that ``low``
    lacks (None when there are none). Static: ``low``, ``high``, ``params``."""

    conv: ExactConv | None
    low: int = static_field()
    high: int = static_field()
    params: CKKSParams = static_field()


def make_mod_raise_tables(params: CKKSParams, low: int = 0, high: int | None = None) -> ModRaiseTables:
    """Tables raising ciphertexts from level ``low`` to ``high`` (default: the top level)."""
    high = params.max_level if high is None else params.check_level(high)
    params.check_level(low)
    if high < low:
        raise ValueError(f"make_mod_raise_tables: level {high} is below level {low}")
    src = params.rows(low)
    dst = tuple(r for r in params.rows(high) if r not in src)
    conv = make_exact_conv(params.q_primes, src, dst) if dst else None
    return ModRaiseTables(conv=conv, low=low, high=high, params=params)


def mod_raise(ct: Ciphertext, ctx: CKKSContext, tables: ModRaiseTables) -> Ciphertext:
    """Ciphertext at level ``tables.low`` (phase m + e mod q) -> ciphertext at ``tables.high``
    with phase m + e + q I (same scale label, same slots); jittable, batched."""
    ctx = check_context(ctx, "mod_raise")
    check_ct(ct, ctx, "mod_raise")
    if not isinstance(tables, ModRaiseTables) or tables.params != ctx.params:
        raise TypeError("mod_raise: expected ModRaiseTables of this parameter set (make_mod_raise_tables)")
    if ct.level != tables.low:
        raise ValueError(f"mod_raise: the tables raise from level {tables.low}, the ciphertext is at "
                         f"level {ct.level} (level_down it first)")
    p = ctx.params
    src, high = p.rows(ct.level), p.rows(tables.high)
    coeff = ops.intt(ct.data, ctx.ring, src)                                   # [..., 2, Ls, N]
    if tables.conv is None:
        lifted = coeff
    else:
        conv = ops.exact_conv(coeff, tables.conv)                              # [..., 2, Ld, N]
        limbs = [ops.take_limbs(coeff, [src.index(r)]) if r in src else
                 ops.take_limbs(conv, [tables.conv.dst_rows.index(r)]) for r in high]
        lifted = jnp.concatenate(limbs, axis=-2)
    return ct.replace(data=ops.ntt(lifted, ctx.ring, high), level=tables.high)


def switch_key(ct: Ciphertext, key, ctx: CKKSContext, tables=None) -> Ciphertext:
    """(c0, c1) under s' -> (c0 + u0, u1) under s, for ``key`` switching s' to s; ``tables``:
    key-switching tables of the ciphertext's level (default: the context's)."""
    ctx = check_context(ctx, "switch_key")
    check_ct(ct, ctx, "switch_key")
    tables = ctx.keyswitch_tables(ct.level) if tables is None else tables
    rows = ctx.params.rows(ct.level)
    if tuple(tables.rows) != rows:
        raise ValueError(f"switch_key: the tables are for rows {tables.rows}, the ciphertext's level "
                         f"{ct.level} has rows {rows}")
    u = keyswitch.key_switch(ct.data[..., 1, :, :], key, ctx.ring, tables)
    c0 = ops.add_mod(ct.data[..., 0, :, :], u[..., 0, :, :], ctx.ring, rows)
    return ct.replace(data=jnp.stack([c0, u[..., 1, :, :]], axis=-3))
