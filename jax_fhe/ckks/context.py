"""The CKKS evaluation context: every device table the scheme needs, as one pytree.

A :class:`CKKSContext` holds the RNS tables for every prime (q rows then special rows), the
NTT of X^(N/2) (multiplication by the imaginary unit), the rescale tables of every level and
the key-switching tables of every level (of the method the parameter set names,
:mod:`jax_fhe.rlwe.keyswitch`). Pass it into jitted functions as an argument.
"""
from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import ops, rns
from ..rlwe import keyswitch
from ..rns.crt import ExactConv, make_exact_conv
from ..rns.pytree import HostTable, host_u32, pytree_dataclass, static_field, tables_field
from .params import CKKSParams


@pytree_dataclass
class RescaleTables:
    """Rescaling from level l (basis B) to level l - 1 (basis B'), D = B - B', R = B' - B:
    x' = (x R - [x R]_D) / D on every prime of B'.

    conv:    centered conversion D -> B'.
    r_mod_d: uint32[|D|]  R mod each dropped prime.
    r_dinv:  uint32[|B'|] R D^-1 mod each prime of B' (0 on the added primes).
    d_inv:   uint32[|B'|] D^-1 mod each prime of B'.
    Static: ``drop_pos`` (limb positions of D in level-l data), ``keep_pos`` (for each limb of
    B', its position in level-l data; 0 for added primes, whose factor r_dinv is 0).
    """

    conv: ExactConv
    r_mod_d: HostTable = static_field()
    r_dinv: HostTable = static_field()
    d_inv: HostTable = static_field()
    drop_pos: tuple = static_field()
    keep_pos: tuple = static_field()


def make_rescale_tables(params: CKKSParams, level: int) -> RescaleTables:
    rows, new = params.rows(level), params.rows(level - 1)
    drop, add = params.dropped(level), params.added(level)
    q = params.q_primes
    big_d = math.prod(q[r] for r in drop)
    big_r = math.prod(q[r] for r in add)
    return RescaleTables(
        conv=make_exact_conv(q, drop, new),
        r_mod_d=host_u32([big_r % q[r] for r in drop]),
        r_dinv=host_u32([big_r * pow(big_d, -1, q[r]) % q[r] for r in new]),
        d_inv=host_u32([pow(big_d, -1, q[r]) for r in new]),
        drop_pos=tuple(rows.index(r) for r in drop),
        keep_pos=tuple(rows.index(r) if r in rows else 0 for r in new),
    )


@pytree_dataclass
class CKKSContext:
    """Device tables for one parameter set.

    ring:      :class:`jax_fhe.rns.RNSContext` over ``params.all_primes`` (q rows, then P rows).
    imag:      uint32[T, N]  NTT of X^(N/2) on every row (the imaginary unit in every slot).
    rescale:   per level l: :class:`RescaleTables` for l -> l-1 (None at level 0).
    keyswitch: per level l: the key-switching tables of level l's basis (method
               ``params.keyswitch``, or per level for "auto": :func:`jax_fhe.rlwe.keyswitch.level_method`;
               :class:`jax_fhe.rlwe.HybridTables` for "hybrid", :class:`jax_fhe.rlwe.KLSSTables`
               for "klss").
    Static: ``params``.
    """

    ring: rns.RNSContext
    imag: jax.Array
    rescale: tuple = tables_field()
    keyswitch: tuple = tables_field()
    params: CKKSParams = static_field()

    def __repr__(self) -> str:
        levels = self.levels()
        if len(levels) == self.params.max_level + 1:
            return f"CKKSContext({self.params!r})"
        return f"CKKSContext({self.params!r}, levels={levels})"

    def levels(self) -> tuple:
        """The levels whose key-switching tables this context holds (all, unless restricted
        with :meth:`for_levels`)."""
        return tuple(l for l, t in enumerate(self.keyswitch) if t is not None)

    def for_levels(self, levels) -> "CKKSContext":
        """The same context holding only the rescale and key-switching tables of ``levels``.

        A function that works at one level (e.g. ``mul`` then rescale at level l) needs only
        level l's tables; the cut context says so loudly when an operation needs a level it left
        out. (The tables are :class:`jax_fhe.rns.HostTable` constants, not arguments, so a jitted
        call no longer pays per table either way.)"""
        keep = {int(l) for l in levels}
        for l in keep:
            self.params.check_level(l)
        pick = lambda tabs: tuple(t if l in keep else None for l, t in enumerate(tabs))  # noqa: E731
        return dataclasses.replace(self, rescale=pick(self.rescale), keyswitch=pick(self.keyswitch))

    def rescale_tables(self, level: int) -> RescaleTables:
        """The tables rescaling from ``level`` to level - 1."""
        return self._tables(self.rescale, level, "rescale")

    def keyswitch_tables(self, level: int):
        """The key-switching tables of ``level``'s basis."""
        return self._tables(self.keyswitch, level, "key-switching")

    def _tables(self, tabs, level, what):
        t = tabs[level]
        if t is None and self.keyswitch[level] is None:
            raise ValueError(f"this context holds tables for levels {self.levels()} only "
                             f"(CKKSContext.for_levels), not level {level}")
        if t is None:
            raise ValueError(f"no {what} tables at level {level}")
        return t


def make_context(params: CKKSParams) -> CKKSContext:
    """Build every table for ``params`` (host-side exact integers, uploaded to the default
    device; a second or so for N = 2^16). Move it with ``jax.device_put`` if needed."""
    if not isinstance(params, CKKSParams):
        raise TypeError(f"make_context: expected CKKSParams, got {type(params).__name__}")
    ring = rns.make_context(params.all_primes, params.n)
    mono = np.zeros((len(params.all_primes), params.n), dtype=np.uint32)
    mono[:, params.n // 2] = 1
    imag = ops.ntt(jnp.asarray(mono), ring)
    rescale = (None,) + tuple(make_rescale_tables(params, l) for l in range(1, params.max_level + 1))
    keyswitch_tables = tuple(keyswitch.level_tables(params, l) for l in range(params.max_level + 1))
    return CKKSContext(ring=ring, imag=imag, rescale=rescale, keyswitch=keyswitch_tables, params=params)


def check_context(ctx, what: str) -> CKKSContext:
    if not isinstance(ctx, CKKSContext):
        raise TypeError(f"{what}: expected a CKKSContext (jax_fhe.ckks.make_context), got {type(ctx).__name__}")
    return ctx
