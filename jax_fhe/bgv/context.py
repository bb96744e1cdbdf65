"""The BGV evaluation context: every device table the scheme needs, as one pytree.

A :class:`BGVContext` holds the RNS tables of every prime (``ring``: q rows, then the special
rows), the plaintext ring (``plain``: t and the slot permutation, shared with BFV), and per
level: the key-switching tables with the t-corrected ModDown (method ``params.keyswitch``,
option ``plain_modulus=t``), the modulus-switching tables and the conversion to t used by
decryption. Pass it into jitted functions as an argument.
"""
from __future__ import annotations

import dataclasses
import math


from .. import rns
from ..bfv.encoder import PlainTables, make_plain_tables
from ..rlwe import keyswitch
from ..rlwe.plainmod import PlainCorrection, make_plain_correction
from ..rns.crt import ExactConv, MixedRadixConv, make_exact_conv, make_mixed_radix_conv
from ..rns.pytree import HostTable, host_u32, pytree_dataclass, static_field, tables_field
from .params import BGVParams


@pytree_dataclass
class ModSwitchTables:
    """Modulus switching from level l (basis B) to l - 1 (B' = B - D), keeping the phase mod t:
    x' = (x - delta) / D with delta = [x]_D + D [-[x]_D D^-1]_t.

    conv:    centered conversion D -> B'.
    plain:   the t-correction (:class:`jax_fhe.rlwe.plainmod.PlainCorrection`).
    d_inv:   uint32[|B'|] D^-1 mod each prime of B'.
    Static: ``drop_pos`` (limb positions of D in level-l data), ``keep_pos`` (of B'), ``d_mod_t``
    (D mod t: the factor a switch divides the message by).
    """

    conv: ExactConv
    plain: PlainCorrection
    d_inv: HostTable = static_field()
    drop_pos: tuple = static_field()
    keep_pos: tuple = static_field()
    d_mod_t: int = static_field()


def make_mod_switch_tables(params: BGVParams, level: int) -> ModSwitchTables:
    """The tables of the modulus switch ``level`` -> level - 1: the exact conversion of the dropped
    primes, its t correction and D^-1 mod the kept primes (D: the dropped primes' product)."""
    rows, new, drop = params.rows(level), params.rows(level - 1), params.dropped(level)
    q = params.q_primes
    big_d = math.prod(q[r] for r in drop)
    return ModSwitchTables(conv=make_exact_conv(q, drop, new),
                           plain=make_plain_correction(q, drop, new, params.plain_modulus),
                           d_inv=host_u32([pow(big_d, -1, q[r]) for r in new]),
                           drop_pos=tuple(rows.index(r) for r in drop), keep_pos=tuple(rows.index(r) for r in new),
                           d_mod_t=big_d % params.plain_modulus)


@pytree_dataclass
class BGVContext:
    """Device tables for one BGV parameter set (module docstring).

    ring:       RNSContext over ``params.all_primes``.
    plain:      :class:`jax_fhe.bfv.PlainTables` (t, slot permutation).
    keyswitch:  per level, key-switching tables with the t-corrected ModDown.
    mod_switch: per level l, :class:`ModSwitchTables` for l -> l - 1 (None at level 0).
    to_t:       per level, the centered conversion Q_l -> t (decryption).
    Static: ``params``.
    """

    ring: rns.RNSContext
    plain: PlainTables
    keyswitch: tuple = tables_field()
    mod_switch: tuple = tables_field()
    to_t: tuple = tables_field()
    params: BGVParams = static_field()

    def __repr__(self) -> str:
        return f"BGVContext({self.params!r})"

    @property
    def error_factor(self) -> int:
        """The noise factor of keys and encryptions: t."""
        return self.params.plain_modulus

    def levels(self) -> tuple:
        """The levels whose tables this context holds (all of them unless :meth:`for_levels`)."""
        return tuple(l for l, t in enumerate(self.keyswitch) if t is not None)

    def for_levels(self, levels) -> "BGVContext":
        """The same context holding only the per-level tables (key switching, modulus switching
        from the level, decryption's conversion) of ``levels``.

        As :meth:`jax_fhe.ckks.CKKSContext.for_levels`: using a level that was left out
        raises."""
        keep = {int(l) for l in levels}
        for l in keep:
            self.params.check_level(l)
        pick = lambda tabs: tuple(t if l in keep else None for l, t in enumerate(tabs))  # noqa: E731
        return dataclasses.replace(self, keyswitch=pick(self.keyswitch), mod_switch=pick(self.mod_switch),
                                   to_t=pick(self.to_t))

    def _held(self, level: int) -> None:
        self.params.check_level(level)
        if self.keyswitch[level] is None:
            raise ValueError(f"this context holds tables for levels {self.levels()} only "
                             f"(BGVContext.for_levels), not level {level}")

    def keyswitch_tables(self, level: int):
        """The key-switching tables at ``level`` (t-corrected ModDown)."""
        self._held(level)
        return self.keyswitch[level]

    def mod_switch_tables(self, level: int) -> ModSwitchTables:
        """The tables switching from ``level`` to level - 1."""
        self.params.check_level(level)
        if level == 0:
            raise ValueError("no modulus switch below level 0")
        self._held(level)
        return self.mod_switch[level]

    def to_t_conv(self, level: int) -> MixedRadixConv:
        """The centered conversion Q_level -> t used by decryption."""
        self._held(level)
        return self.to_t[level]


def make_context(params: BGVParams) -> BGVContext:
    """Build every table for ``params`` (host-side exact integers, uploaded to the default
    device). Move it with ``jax.device_put`` if needed."""
    if not isinstance(params, BGVParams):
        raise TypeError(f"make_context: expected BGVParams, got {type(params).__name__}")
    t = params.plain_modulus
    q = tuple(params.q_primes)
    levels = range(params.max_level + 1)
    ks = tuple(keyswitch.make_tables(params.keyswitch, params.all_primes, params.rows(l), params.special_rows,
                                     params.alpha, plain_modulus=t) for l in levels)
    ms = (None,) + tuple(make_mod_switch_tables(params, l) for l in range(1, params.max_level + 1))
    to_t = tuple(make_mixed_radix_conv(q + (t,), params.rows(l), (len(q),)) for l in levels)
    return BGVContext(ring=rns.make_context(params.all_primes, params.n), plain=make_plain_tables(t, params.n),
                      keyswitch=ks, mod_switch=ms, to_t=to_t, params=params)


def check_context(ctx, what: str) -> BGVContext:
    if not isinstance(ctx, BGVContext):
        raise TypeError(f"{what}: expected a BGVContext (jax_fhe.bgv.make_context), got {type(ctx).__name__}")
    return ctx
