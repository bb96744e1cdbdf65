"""Base conversion (fast basis extension) as an XLA FFI primitive."""
from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..rns.bconv import BConvTable
from ..rns.crt import MAX_TERMS, CrtQuotient, ExactConv, MixedRadixConv
from ..rns.pytree import HostTable, host_u32, pytree_dataclass, static_field
from ._checks import as_poly, check_canonical
from .modarith import mul_shoup

MAX_STACKED = 64  # conversions in one centered launch (ffi/bconv_args.h kMaxBconvDigits)


def bconv(x, table: BConvTable) -> jax.Array:
    """Convert ``x``: uint32[..., Lin, N] (residues mod ``table.src``) to
    uint32[..., Lout, N] (residues mod ``table.dst``):

        out_i = sum_j [x_j (Q/q_j)^-1]_{q_j} (Q/q_j)  mod p_i,   Q = prod(table.src).
    """
    x, out = _check(x, table, "bconv")
    call = jax.ffi.ffi_call("jax_fhe_bconv", out, vmap_method="expand_dims")
    return call(x, table.in_consts, table.mat, table.out_consts, fold_every=table.fold_every)


def bconv_centered(x, table: BConvTable, quotient, src_prod, limb_offset: int | None = None) -> jax.Array:
    """Centered base conversion in one pass (``x`` read once, the result written once).

    x:        uint32[..., Lin, N], residues mod ``table.src`` (product Q), 1 <= Lin <= 16; or,
              with ``limb_offset``, uint32[..., Lx, N] whose limbs [limb_offset, limb_offset +
              Lin) are those residues (read in place: no slice is materialised).
    quotient: the fixed-point CRT quotient of ``table.src`` (:class:`jax_fhe.rns.CrtQuotient`:
              inv_fix uint32[Lin], static fix_bits).
    src_prod: uint32[Lout], Q mod each prime of ``table.dst``.
    Returns uint32[..., Lout, N]:

        y_j   = [x_j (Q/q_j)^-1]_{q_j}
        k     = (sum_j mulhi(y_j, inv_fix_j) + 2^(F-1)) >> F          (uint32, F = fix_bits)
        out_i = (sum_j y_j (Q/q_j) - k Q)  mod p_i

    bit for bit what ``bconv`` followed by :func:`rounded_quotient` and the correction
    computes.
    """
    x, _ = _check(x, table, "bconv_centered", limb_offset)
    if not isinstance(quotient, CrtQuotient):
        raise TypeError(f"bconv_centered: expected a CrtQuotient (jax_fhe.rns.make_crt_quotient), "
                        f"got {type(quotient).__name__}")
    lin, lout = len(table.src), len(table.dst)
    if lin > MAX_TERMS:
        raise ValueError(f"bconv_centered: at most {MAX_TERMS} source limbs (fixed-point quotient), got {lin}")
    if not 1 <= quotient.fix_bits <= 28:
        raise ValueError(f"bconv_centered: fix_bits must be in [1, 28], got {quotient.fix_bits}")
    for name, arr, want in (("quotient.inv_fix", quotient.inv_fix, lin), ("src_prod", src_prod, lout)):
        if getattr(arr, "dtype", None) != jnp.uint32 or tuple(arr.shape) != (want,):
            raise ValueError(f"bconv_centered: {name} must be uint32[{want}], got "
                             f"{getattr(arr, 'dtype', type(arr).__name__)}{list(getattr(arr, 'shape', ()))}")
    return _centered_call(x, lout, (table.in_consts, table.mat, table.out_consts, quotient.inv_fix, src_prod),
                          centered_fold_every(table, quotient.fix_bits), [int(limb_offset or 0)],
                          [quotient.fix_bits])


def _centered_call(x, out_limbs: int, tables: tuple, fold_every: int, starts, fix_bits) -> jax.Array:
    """The jax_fhe_bconv_centered call behind bconv_centered and bconv_centered_stacked:
    x uint32[..., Lx, N] -> uint32[..., out_limbs, N]; ``tables`` = (in_consts, mat,
    out_consts, inv_fix, src_prod) of D conversions; ``starts``, ``fix_bits``: D integers each
    (each conversion's first input limb and fixed-point precision)."""
    out = jax.ShapeDtypeStruct(x.shape[:-2] + (out_limbs, x.shape[-1]), x.dtype)
    call = jax.ffi.ffi_call("jax_fhe_bconv_centered", out, vmap_method="expand_dims")
    return call(x, *tables, fold_every=int(fold_every), starts=np.asarray(starts, np.int64),
                fix_bits=np.asarray(fix_bits, np.int64))


def centered_fold_every(table: BConvTable, fix_bits: int) -> int:
    """``table.fold_every`` for a centered conversion. Without intermediate reductions the CUDA
    kernel adds the correction k (p_i - Q mod p_i), k < 2^(32 - fix_bits), to the unreduced
    64-bit sum, so that schedule is kept only where the table has room for it
    (``table.sum_room``); elsewhere the conversion reduces every Lin - 1 terms, which changes
    the kernel's schedule, not its result."""
    lin = len(table.src)
    if table.fold_every < lin or lin < 2 or table.sum_room >= (1 << (32 - fix_bits)) - 1:
        return table.fold_every  # lin = 1: p q + 2^31 p < 2^64 always
    return lin - 1


@pytree_dataclass
class StackedCenteredConv:
    """D centered conversions as the tables of one launch (:func:`bconv_centered_stacked`;
    ModUp converts every digit at once), stacked along the first axis of
    :func:`bconv_centered`'s tables, each padded to Lin source and Lout target limbs:

    in_consts uint32[D*3, Lin], mat uint32[D*Lout, Lin], out_consts uint32[D*4, Lout],
    inv_fix uint32[D*Lin], src_prod uint32[D*Lout].
    Static: ``lin``, ``lout`` (the padded sizes); ``starts`` (conversion d reads the Lin limbs
    from ``limb_offset + starts[d]``), ``leads`` (its own source limbs are those from
    ``starts[d] + leads[d]``; the rest of the window has zero tables), ``louts`` (its own
    targets, the first ``louts[d]`` of its Lout output limbs; the rest are written as zeros),
    ``fix_bits`` (each conversion's quotient precision), ``fold_every`` (the smallest).
    """

    in_consts: HostTable = static_field()
    mat: HostTable = static_field()
    out_consts: HostTable = static_field()
    inv_fix: HostTable = static_field()
    src_prod: HostTable = static_field()
    lin: int = static_field()
    lout: int = static_field()
    starts: tuple = static_field()
    leads: tuple = static_field()
    louts: tuple = static_field()
    fix_bits: tuple = static_field()
    fold_every: int = static_field()

    @property
    def digits(self) -> int:
        """D, the number of conversions."""
        return len(self.starts)


def stack_centered(tables: Sequence[BConvTable], quotients: Sequence, src_prods: Sequence,
                   starts: Sequence[int] | None = None, leads: Sequence[int] | None = None) -> StackedCenteredConv:
    """The tables of several centered conversions (the arguments of :func:`bconv_centered`,
    one per conversion) stacked for :func:`bconv_centered_stacked`. Built once, with the
    tables (not per call).

    Without ``starts``, the conversions map equal numbers of limbs and conversion d reads source
    limbs [d Lin, (d+1) Lin) (from the call's ``limb_offset``). With them, conversion d reads a
    window of Lin = max source count limbs from ``starts[d]``, its own limbs starting
    ``leads[d]`` into it (ModUp's digits of unequal sizes, each window kept inside the input);
    the smaller tables are padded with zero entries, which read the neighbouring limbs without
    effect, and the smaller outputs with zero limbs."""
    tables, quotients, src_prods = list(tables), list(quotients), list(src_prods)
    if not tables or not len(tables) == len(quotients) == len(src_prods):
        raise ValueError("stack_centered: give one table, quotient and src_prod per conversion")
    if len(tables) > MAX_STACKED:
        raise ValueError(f"stack_centered: at most {MAX_STACKED} conversions in one launch, got {len(tables)}")
    lins, louts = [len(t.src) for t in tables], [len(t.dst) for t in tables]
    lin, lout = max(lins), max(louts)
    if not 1 <= lin <= MAX_TERMS:
        raise ValueError(f"stack_centered: at most {MAX_TERMS} source limbs, got {lin}")
    if starts is None:
        if len(set(lins)) != 1 or leads is not None:
            raise ValueError("stack_centered: conversions of different sizes need their starts and leads")
        starts, leads = [d * lin for d in range(len(tables))], [0] * len(tables)
    starts = [int(a) for a in starts]
    leads = [0] * len(tables) if leads is None else [int(a) for a in leads]
    if not len(starts) == len(leads) == len(tables):
        raise ValueError("stack_centered: give one start and one lead per conversion")
    if any(a < 0 or ld < 0 or ld + n > lin for a, ld, n in zip(starts, leads, lins)):
        raise ValueError(f"stack_centered: every conversion's limbs must lie in its window of {lin} "
                         f"(starts {starts}, leads {leads}, sizes {lins})")
    in_c, mat, out_c, inv_fix, prod = [], [], [], [], []
    for t, q, sp, ld, li, lo in zip(tables, quotients, src_prods, leads, lins, louts):
        ic = np.zeros((3, lin), np.uint32)
        ic[0] = np.asarray(t.in_consts)[0, 0]                 # a valid modulus; the zero factor
        ic[:, ld:ld + li] = np.asarray(t.in_consts)           # (pre = 0) makes the term 0
        m = np.zeros((lout, lin), np.uint32)
        m[:lo, ld:ld + li] = np.asarray(t.mat)
        oc = np.repeat(np.asarray(t.out_consts)[:, :1], lout, axis=1)   # padded targets: a valid
        oc[:, :lo] = np.asarray(t.out_consts)                           # prime, zero table row
        fx = np.zeros(lin, np.uint32)
        fx[ld:ld + li] = np.asarray(q.inv_fix)
        pr = np.zeros(lout, np.uint32)
        pr[:lo] = np.asarray(sp)
        in_c.append(ic), mat.append(m), out_c.append(oc), inv_fix.append(fx), prod.append(pr)
    cat = lambda arrs: host_u32(np.concatenate(arrs, axis=0))  # noqa: E731
    return StackedCenteredConv(
        in_consts=cat(in_c), mat=cat(mat), out_consts=cat(out_c), inv_fix=cat(inv_fix), src_prod=cat(prod),
        lin=lin, lout=lout, starts=tuple(starts), leads=tuple(leads), louts=tuple(louts),
        fix_bits=tuple(int(q.fix_bits) for q in quotients),
        fold_every=min(_padded_fold_every(t, q.fix_bits, lin) for t, q in zip(tables, quotients)))


def _padded_fold_every(table: BConvTable, fix_bits: int, lin: int) -> int:
    """A conversion's fold interval in a launch padded to ``lin`` source limbs: a table that
    needs no intermediate reduction needs none with zero terms added (``lin``), so a small digit
    does not make the whole launch reduce after every term."""
    f = centered_fold_every(table, fix_bits)
    return lin if f >= len(table.src) else f


def bconv_centered_stacked(x, stacked: StackedCenteredConv, limb_offset: int = 0) -> jax.Array:
    """D centered conversions in one launch: conversion d reads limbs [limb_offset + starts[d],
    limb_offset + starts[d] + Lin) of ``x`` (uint32[..., Lx, N], in place) and writes limbs
    [d Lout, (d+1) Lout) of the result, uint32[..., D*Lout, N]: its own ``louts[d]`` targets,
    then zeros. Bit for bit D calls of :func:`bconv_centered` (on each conversion's own limbs)
    concatenated, each padded with zero limbs to Lout."""
    if not isinstance(stacked, StackedCenteredConv):
        raise TypeError(f"bconv_centered_stacked: expected a StackedCenteredConv (stack_centered), "
                        f"got {type(stacked).__name__}")
    x = as_poly(x, "bconv_centered_stacked")
    starts = [int(limb_offset) + a for a in stacked.starts]
    lo, hi = min(starts), max(starts) + stacked.lin
    if not (0 <= lo and hi <= x.shape[-2]):
        raise ValueError(f"bconv_centered_stacked: limbs [{lo}, {hi}) are not all in the input's "
                         f"{x.shape[-2]} limbs")
    return _centered_call(x, stacked.digits * stacked.lout, (stacked.in_consts, stacked.mat, stacked.out_consts,
                                                             stacked.inv_fix, stacked.src_prod),
                          stacked.fold_every, starts, stacked.fix_bits)


def _check(x, table, what, limb_offset=None):
    """x as a validated uint32[..., Lin, N] (with ``limb_offset``: at least limb_offset + Lin
    limbs) and the output's ShapeDtypeStruct [..., Lout, N]."""
    if not isinstance(table, BConvTable):
        raise TypeError(f"{what}: expected a BConvTable (jax_fhe.rns.make_bconv_table), got {type(table).__name__}")
    host = x
    x = as_poly(x, what)
    lin = len(table.src)
    if limb_offset is None:
        if x.shape[-2] != lin:
            raise ValueError(f"{what}: input has {x.shape[-2]} limbs but the table converts from {lin}")
    elif not (0 <= int(limb_offset) and int(limb_offset) + lin <= x.shape[-2]):
        raise ValueError(f"{what}: limbs [{limb_offset}, {int(limb_offset) + lin}) are not all in the "
                         f"input's {x.shape[-2]} limbs")
    off = int(limb_offset or 0)
    check_canonical(host, table.src, what, slice(off, off + lin))
    return x, jax.ShapeDtypeStruct(x.shape[:-2] + (len(table.dst), x.shape[-1]), x.dtype)


def rounded_quotient(y: jax.Array, cq: CrtQuotient) -> jax.Array:
    """y: uint32[..., L, N] (y_l < q_l). Returns uint32[..., N]: round(sum_l y_l / q_l), in [0, L],
    in 32-bit fixed point (:mod:`jax_fhe.rns.crt`): identical bits on every backend."""
    terms = lax.mulhi(y, jnp.broadcast_to(cq.inv_fix[:, None], y.shape))
    frac = jnp.sum(terms, axis=-2, dtype=jnp.uint32)
    return (frac + jnp.uint32(1 << (cq.fix_bits - 1))) >> cq.fix_bits


def exact_conv(x, conv: ExactConv, limb_offset: int | None = None) -> jax.Array:
    """Centered base conversion of coefficient-domain residues (one kernel, :func:`bconv_centered`).

    x: uint32[..., Lin, N], residues of an integer polynomial v modulo the source primes
    (product Q). Returns uint32[..., Lout, N]: [v]_Q, the representative in [-Q/2, Q/2), modulo
    each target prime. The fast conversion gives [v]_Q + u Q with u = floor(sum_j y_j / q_j),
    y_j = [x_j (Q/q_j)^-1]_{q_j}; this subtracts round(sum_j y_j / q_j) Q instead, computed in
    32-bit fixed point (:func:`rounded_quotient`): the rounding can only be wrong when the
    fraction is within about 2^-20 of 1/2, and then the result is off by +-Q (+-1 after the
    division that follows in ModDown or rescaling) on that coefficient. At most 16 source primes.
    ``limb_offset``: x holds more limbs; the source residues are limbs [limb_offset,
    limb_offset + Lin), read in place.
    """
    if not isinstance(conv, ExactConv):
        raise TypeError(f"exact_conv: expected an ExactConv (jax_fhe.rns.make_exact_conv), got {type(conv).__name__}")
    return bconv_centered(x, conv.table, conv.quotient, conv.src_prod, limb_offset)


def mixed_radix_conv(x, conv: MixedRadixConv) -> jax.Array:
    """Centered base conversion from any number of source primes (``exact_conv`` takes at most
    16), composed of one :func:`exact_conv` per chunk of source primes
    (:class:`jax_fhe.rns.MixedRadixConv`) and element-wise updates.

    x: uint32[..., Lin, N], coefficient-domain residues of an integer polynomial v modulo the
    source primes (product Q, in ``conv.src_rows`` order). Returns uint32[..., Lout, N]: an
    integer congruent to v mod Q, modulo each target prime. It is [v]_Q exactly where
    |[v]_Q| < Q/2 (1 - 2^-18) (the last chunk's rounding can only slip near Q/2); elsewhere it
    may be [v]_Q -+ Q; its absolute value is always below (Q/2)(1 + 2^-16). With at most 16
    source primes it is :func:`exact_conv` (one chunk). Jittable, batched, the same bits on
    every backend."""
    if not isinstance(conv, MixedRadixConv):
        raise TypeError(f"mixed_radix_conv: expected a MixedRadixConv (jax_fhe.rns.make_mixed_radix_conv), "
                        f"got {type(conv).__name__}")
    x = as_poly(x, "mixed_radix_conv")
    if x.shape[-2] != len(conv.src_rows):
        raise ValueError(f"mixed_radix_conv: input has {x.shape[-2]} limbs but the tables convert from "
                         f"{len(conv.src_rows)}")
    nd = len(conv.dst_rows)
    rest, acc = x, None
    for j, table in enumerate(conv.chunks):
        c = exact_conv(rest, table, limb_offset=0)      # digit j on the later chunks + the targets
        digit = c[..., c.shape[-2] - nd:, :]
        if acc is None:
            acc = digit
        else:
            p = jnp.broadcast_to(conv.scale[j][0][:, None], digit.shape)
            acc = _csub(acc + mul_shoup(digit, conv.scale[j]), p)
        if j + 1 < len(conv.chunks):
            later = rest[..., len(table.src_rows):, :]
            q = jnp.broadcast_to(conv.inv[j][0][:, None], later.shape)
            rest = mul_shoup(_csub(later + (q - c[..., :later.shape[-2], :]), q), conv.inv[j])
    return acc


def _csub(x, q):
    return jnp.minimum(x, x - q)  # x < 2q: the canonical residue
