"""KLSS key switching (Kim, Lee, Seo, Song, CRYPTO 2023): hybrid key switching whose key product
runs exactly, over the integers, in a small auxiliary RNS basis T.

Notation as in :mod:`.hybrid` (rows, digits of ``alpha`` global q rows, special rows P); the
corrected algorithm is notes/klss.md §2.4.6. A hybrid key has, per digit l, the pair
ksk_l = (b_l, a_l) over every row. KLSS decomposes it a second time: the rows in the order
"special rows, then q rows 0, 1, ..." are cut into *blocks* of ``block`` rows (J_m, product
Q~_m), and the key digit D~(ksk_{j,l})_m is the centered integer [ksk_{j,l}]_{Q~_m}. With the
input's digits x_l = [x]_{Q_l} (centered, exactly as hybrid's ModUp makes them), the integer
polynomials

    U_{j,m} = sum_l x_l * D~(ksk_{j,l})_m          (j = 0, 1)

are congruent to hybrid's key product sum_l x_l ksk_{j,l} modulo every prime of block m, and
are small: |U| <= N sum_l |x_l| max_m |D~_m|. So they are computed modulo T (NTTs over T's
primes) and lifted exactly when T exceeds twice that bound (:func:`make_layout` asserts it),
then reduced modulo the block's own primes. The result is bit for bit hybrid's key product
before ModDown (and so after it): the same first-level key gives the same ciphertext.

Stages (the key-switching interface, :mod:`.keyswitch`):

1. :func:`decompose` (hoistable): INTT of x (one launch), every digit's exact centered
   conversion to T (one stacked launch where each digit's rows lie together in the basis,
   :func:`jax_fhe.rlwe.stack_digits`), NTT over
   T: ``uint32[..., d r', N]`` (digit i on limbs [i r', (i+1) r')).
2. The product over T (:func:`_t_product`): for every active block m and T prime, the sum over
   digits of digit x key (:func:`jax_fhe.ops.digit_key_product`: 64-bit accumulation with a
   reduction every four terms, each key polynomial read once, nothing key-sized written), up to
   8 digits per launch, its inverse NTT fused into the launch when one launch covers every digit.
   Then every block's exact centered conversion T -> its active rows (one stacked launch for the
   blocks of full size), which gives hybrid's product in the coefficient domain.
3. :func:`key_switch_decomposed`: ModDown in the coefficient domain (the special rows are
   already coefficients: no INTT), then one NTT of the result. :func:`product_extended` NTTs
   the whole extended product instead (double hoisting); :func:`mod_down` and
   :func:`lift_extended` are hybrid's.

Keys are :class:`KLSSKey` (uint32[dnum, 2, D2, r', N], NTT over T), made from a hybrid key
(:func:`key_from_hybrid`); tables are :class:`KLSSTables` per level, all sharing one
:class:`KLSSLayout` (T, the blocks). The method registers itself as "klss" with options
``klss_block`` (rows per block; default by an operation count), ``klss_t_count`` (number of T
primes; default the fewest that satisfy the bound) and ``klss_t_bits`` (their size, default 31).

The scheme-independent part is everything up to the extended product; ModDown is hybrid's
(CKKS and BFV). A BGV ModDown (the t-corrected one) plugs into :func:`_mod_down_coeff`.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np

from .. import ops
from ..ops import take_limbs, take_static
from ..rns.context import RNSContext, make_context
from ..rns.crt import MAX_TERMS, ExactConv, make_exact_conv, quotient_fix_bits
from ..rns.primes import ntt_primes
from ..rns.pytree import pytree_dataclass, static_field
from . import hybrid, keyswitch
from .encryption import NOISE_TAIL
from .params import digit_rows

OPTIONS = ("klss_block", "klss_t_count", "klss_t_bits")


# -- the layout: T and the blocks ---------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class KLSSLayout:
    """The chain-wide facts of KLSS key switching, shared by a key and every level's tables.

    primes:   the ring's primes (q rows 0..num_q-1, then the special rows).
    num_q:    number of q rows.
    alpha:    rows per first-level digit (hybrid's).
    n:        ring degree.
    block:    rows per second-level block.
    t_primes: the auxiliary primes T (r' of them).
    checked:  whether T was checked against the bound (always, unless a test builds a layout
              that must fail).
    """

    primes: tuple
    num_q: int
    alpha: int
    n: int
    block: int
    t_primes: tuple
    checked: bool = True

    @property
    def ext_order(self) -> tuple:
        """Every row in block order: the special rows, then q rows 0, 1, ..."""
        return tuple(range(self.num_q, len(self.primes))) + tuple(range(self.num_q))

    @property
    def blocks(self) -> tuple:
        """Block m = rows ext_order[m block, (m+1) block)."""
        e = self.ext_order
        return tuple(e[i:i + self.block] for i in range(0, len(e), self.block))

    @property
    def dnum(self) -> int:
        """beta: the number of digits of alpha q primes each (the last may be short)."""
        return -(-self.num_q // self.alpha)

    @property
    def t_count(self) -> int:
        """The number of primes of the auxiliary modulus T."""
        return len(self.t_primes)

    @property
    def all_primes(self) -> tuple:
        """The ring's primes, then T (the prime list of the conversion tables: T's rows follow)."""
        return tuple(self.primes) + tuple(self.t_primes)

    @property
    def t_rows(self) -> tuple:
        """T's rows in :attr:`all_primes`."""
        return tuple(range(len(self.primes), len(self.primes) + len(self.t_primes)))

    def __repr__(self) -> str:
        return (f"KLSSLayout(N={self.n}, q={self.num_q}, p={len(self.primes) - self.num_q}, alpha={self.alpha}, "
                f"block={self.block}, blocks={len(self.blocks)}, T={self.t_count} primes "
                f"(~{sum(math.log2(t) for t in self.t_primes):.0f} bits, needs {required_t_bits(self):.1f})"
                f"{'' if self.checked else ', UNCHECKED'})")


def _conv_bound(moduli: Sequence[int]) -> Fraction:
    """The largest |v| of a centered conversion's result from ``moduli`` (product M): the
    fixed-point quotient (:mod:`jax_fhe.rns.crt`) rounds within 2 L 2^-F of the exact fraction,
    so |v| <= M (1/2 + 2 L 2^-F)."""
    f = quotient_fix_bits(moduli)
    return math.prod(int(q) for q in moduli) * (Fraction(1, 2) + Fraction(2 * len(moduli), 1 << f))


def product_bound(primes: Sequence[int], n: int, digits: Sequence[Sequence[int]],
                  blocks: Sequence[Sequence[int]]) -> Fraction:
    """max |U_{j,m}| = N sum_l |x_l| max_m |D~_m|: ``digits`` (the rows of each digit of the
    input, its centered value bounded by :func:`_conv_bound`) against key digits of the
    ``blocks`` (full blocks: the key digit is the centered integer modulo the whole block)."""
    xs = sum(_conv_bound([primes[r] for r in d]) for d in digits)
    ks = max(_conv_bound([primes[r] for r in b]) for b in blocks)
    return n * xs * ks


def t_suffices(t_primes: Sequence[int], bound: Fraction) -> bool:
    """Whether |U| <= ``bound`` is recovered exactly from U mod T by the centered conversion T ->
    a block: the fixed-point quotient must round correctly, which holds for |U| / T < 1/2 - 2 r' 2^-F."""
    big_t = math.prod(int(t) for t in t_primes)
    f = quotient_fix_bits(t_primes)
    return bound < big_t * (Fraction(1, 2) - Fraction(2 * len(t_primes), 1 << f))


def _chain_digits_blocks(layout_like) -> tuple:
    primes, num_q, alpha, block = layout_like
    digits = [d for _, d in digit_rows(range(num_q), alpha)]
    ext = tuple(range(num_q, len(primes))) + tuple(range(num_q))
    blocks = [ext[i:i + block] for i in range(0, len(ext), block)]
    return digits, blocks


def required_t_bits(layout: KLSSLayout) -> float:
    """log2 of the smallest T (ignoring the fixed-point margin) for the whole chain: the top
    level, every digit full, every block: log2(2 max |U|)."""
    digits, blocks = _chain_digits_blocks((layout.primes, layout.num_q, layout.alpha, layout.block))
    b = 2 * product_bound(layout.primes, layout.n, digits, blocks)
    return math.log2(b.numerator) - math.log2(b.denominator)


def make_layout(primes: Sequence[int], num_q: int, alpha: int, n: int, block: int,
                t_primes: Sequence[int], *, check: bool = True) -> KLSSLayout:
    """A layout with explicit T primes. Raises ValueError unless T satisfies the bound for the
    whole chain (``check=False`` skips that check: only for tests that show it matters)."""
    primes, t_primes = tuple(int(q) for q in primes), tuple(int(t) for t in t_primes)
    num_q, alpha, n, block = int(num_q), int(alpha), int(n), int(block)
    if not 1 <= num_q < len(primes):
        raise ValueError(f"KLSS: num_q={num_q} must leave at least one special prime of {len(primes)}")
    if not 1 <= alpha <= min(num_q, MAX_TERMS):
        raise ValueError(f"KLSS: alpha={alpha} must be in [1, {min(num_q, MAX_TERMS)}] (exact conversions "
                         f"take at most {MAX_TERMS} source primes)")
    if not 1 <= block <= MAX_TERMS:
        raise ValueError(f"KLSS: klss_block={block} must be in [1, {MAX_TERMS}]")
    if not 1 <= len(t_primes) <= MAX_TERMS:
        raise ValueError(f"KLSS: 1 to {MAX_TERMS} T primes (the exact conversion T -> block), got {len(t_primes)}")
    if set(t_primes) & set(primes) or len(set(t_primes)) != len(t_primes):
        raise ValueError("KLSS: the T primes must be distinct and differ from the ring's primes")
    for t in t_primes:
        if (t - 1) % (2 * n) or t >= 1 << 31:
            raise ValueError(f"KLSS: T prime {t} must be below 2^31 and = 1 mod 2N")
    layout = KLSSLayout(primes=primes, num_q=num_q, alpha=alpha, n=n, block=block, t_primes=t_primes,
                        checked=bool(check))
    if check:
        digits, blocks = _chain_digits_blocks((primes, num_q, alpha, block))
        bound = product_bound(primes, n, digits, blocks)
        if not t_suffices(t_primes, bound):
            have = sum(math.log2(t) for t in t_primes)
            raise ValueError(f"KLSS: T = {len(t_primes)} primes (~{have:.1f} bits) is too small: the exact "
                             f"product needs T > 2 max|U| ~ 2^{required_t_bits(layout):.1f} "
                             f"(max|U| = N sum_l |x_l| max_m |key digit_m|; notes/klss.md §2.4.2)")
    return layout


def _op_cost(d: int, blocks: int, t: int) -> int:
    """Polynomial passes of one KLSS switch at the top level (the default block's yardstick):
    the key read once (2 d D2 r'), the NTTs over T (d r' forward, 2 D2 r' inverse), each
    counted as two passes."""
    return 2 * d * blocks * t + 2 * (d * t + 2 * blocks * t)


def klss_layout(primes: Sequence[int], num_q: int, alpha: int, n: int, *, block: int | None = None,
                t_count: int | None = None, t_bits: int = 31) -> KLSSLayout:
    """The layout of a chain: T = the largest ``t_bits``-bit primes = 1 mod 2N that the ring does
    not use, as few as satisfy the bound (or ``t_count`` of them, which must be enough), and
    blocks of ``block`` rows (default: the size with the fewest polynomial passes, :func:`_op_cost`,
    at the top level; a heuristic, not a measurement: the benchmark sweeps it). Cached: a chain's
    keys and tables share one layout."""
    return _klss_layout(tuple(int(q) for q in primes), int(num_q), int(alpha), int(n), block, t_count, t_bits)


@functools.lru_cache(maxsize=64)
def _klss_layout(primes: tuple, num_q: int, alpha: int, n: int, block, t_count, t_bits) -> KLSSLayout:
    if isinstance(t_bits, bool) or not isinstance(t_bits, int) or not 20 <= t_bits <= 31:
        raise ValueError(f"KLSS: klss_t_bits={t_bits!r} must be an int in [20, 31]")
    try:
        pool = ntt_primes(t_bits, MAX_TERMS, n, exclude=primes)
    except ValueError as e:
        raise ValueError(f"KLSS: not enough {t_bits}-bit NTT primes for T: {e}") from None
    blocks = range(1, MAX_TERMS + 1) if block is None else (block,)
    best = None
    for b in blocks:
        if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_TERMS:
            raise ValueError(f"KLSS: klss_block={b!r} must be an int in [1, {MAX_TERMS}]")
        digits, blks = _chain_digits_blocks((primes, num_q, alpha, b))
        bound = product_bound(primes, n, digits, blks)
        need = next((c for c in range(1, MAX_TERMS + 1) if t_suffices(pool[:c], bound)), None)
        if need is None:
            if block is not None:
                raise ValueError(f"KLSS: klss_block={b} needs more than {MAX_TERMS} T primes of {t_bits} bits; "
                                 f"use smaller blocks or digits (alpha)")
            continue
        cost = _op_cost(len(digits), len(blks), need)
        if best is None or cost < best[0]:
            best = (cost, b, need)
    if best is None:
        raise ValueError(f"KLSS: no block size fits T in {MAX_TERMS} primes of {t_bits} bits with alpha={alpha}")
    _, b, need = best
    if t_count is not None:
        if isinstance(t_count, bool) or not isinstance(t_count, int) or not 1 <= t_count <= MAX_TERMS:
            raise ValueError(f"KLSS: klss_t_count={t_count!r} must be an int in [1, {MAX_TERMS}]")
        if t_count < need:
            try:
                make_layout(primes, num_q, alpha, n, b, pool[:t_count])
            except ValueError as e:
                raise ValueError(f"klss_t_count={t_count} is below the {need} T primes the bound needs "
                                 f"(klss_block={b}): {e}") from None
        need = t_count
    return make_layout(primes, num_q, alpha, n, b, pool[:need])


def layout_for(primes, num_q: int, alpha: int, n: int, klss_block=None, klss_t_count=None,
               klss_t_bits=31) -> KLSSLayout:
    """:func:`klss_layout` from the method's options (``RLWEParams.keyswitch_options`` names)."""
    return klss_layout(primes, num_q, alpha, n, block=klss_block, t_count=klss_t_count, t_bits=klss_t_bits)


@functools.lru_cache(maxsize=16)
def _t_context(t_primes: tuple, n: int) -> RNSContext:
    """NTT tables of T (one per layout, shared by every level's tables and the keys)."""
    return make_context(t_primes, n)


@functools.lru_cache(maxsize=1024)
def _conv(all_primes: tuple, src: tuple, dst: tuple) -> ExactConv:
    return make_exact_conv(all_primes, src, dst)


# -- tables and keys ----------------------------------------------------------------------------------

@pytree_dataclass
class KLSSTables:
    """KLSS key-switching tables for one basis.

    hybrid:       the :class:`jax_fhe.rlwe.HybridTables` of the basis (digits, ModDown, P):
                  the first level is hybrid's.
    t_ring:       RNS tables of T (NTT).
    digit_convs:  per digit, the exact conversion of its rows to T (empty when stacked).
    digit_stacked: the digits' conversions as one launch, or None.
    block_convs:  per group of active blocks (``groups``), the exact conversion T -> the blocks'
                  active rows: a StackedCenteredConv for a run of equal blocks, else an ExactConv.
    Static: ``layout``, ``rows``, ``special_rows``, ``digits`` ((digit, rows), as hybrid's),
    ``blocks`` ((m, active rows), ...), ``groups`` ((first active block, count), ...),
    ``out_order`` (the rows the block conversions write, in order).
    """

    hybrid: hybrid.HybridTables
    t_ring: RNSContext
    digit_convs: tuple
    digit_stacked: object
    block_convs: tuple
    layout: KLSSLayout = static_field()
    rows: tuple = static_field()
    special_rows: tuple = static_field()
    digits: tuple = static_field()
    blocks: tuple = static_field()
    groups: tuple = static_field()
    out_order: tuple = static_field()

    @property
    def ext_rows(self) -> tuple:
        """The rows of the extended basis Q_l P: the q rows, then the special rows."""
        return self.rows + self.special_rows

    def __repr__(self) -> str:
        return (f"KLSSTables(L={len(self.rows)}, alpha_p={len(self.special_rows)}, beta={len(self.digits)}, "
                f"blocks={len(self.blocks)}, T={self.layout.t_count})")


def level_bound(layout: KLSSLayout, rows: Sequence[int], special_rows: Sequence[int]) -> Fraction:
    """max |U| at a basis: its digits (their rows at the basis) against its active blocks."""
    digits = [d for _, d in digit_rows(rows, layout.alpha)]
    active = set(rows) | set(special_rows)
    blocks = [b for b in layout.blocks if active & set(b)]
    return product_bound(layout.primes, layout.n, digits, blocks)


def make_klss_tables(rows: Sequence[int], special_rows: Sequence[int], layout: KLSSLayout) -> KLSSTables:
    """Tables for key switching data on ``rows`` (q rows of ``layout.primes``) with special rows
    ``special_rows`` (all of the layout's, or some: a key restricted to them)."""
    if not isinstance(layout, KLSSLayout):
        raise TypeError(f"make_klss_tables: expected a KLSSLayout (klss_layout), got {type(layout).__name__}")
    primes = layout.primes
    rows, special = tuple(int(r) for r in rows), tuple(int(r) for r in special_rows)
    if not rows or any(not 0 <= r < layout.num_q for r in rows):
        raise ValueError(f"KLSS: the basis rows {rows} must be q rows (0..{layout.num_q - 1})")
    if not special or any(not layout.num_q <= r < len(primes) for r in special):
        raise ValueError(f"KLSS: the special rows {special} must be rows {layout.num_q}..{len(primes) - 1}")
    if layout.checked and not t_suffices(layout.t_primes, level_bound(layout, rows, special)):
        raise ValueError("KLSS: T is too small for this basis")  # cannot happen: the chain bound covers it
    hy = hybrid.make_hybrid_tables(primes, rows, special, layout.alpha)
    allp, trows = layout.all_primes, layout.t_rows
    digit_convs = tuple(_conv(allp, d, trows) for _, d in hy.digits)
    stacked = hybrid.stack_digits(rows, hy.digits, digit_convs)
    active = set(rows) | set(special)
    blocks = tuple((m, tuple(r for r in b if r in active)) for m, b in enumerate(layout.blocks) if active & set(b))
    groups, convs = [], []
    i = 0
    while i < len(blocks):
        j = i + 1
        while j < len(blocks) and len(blocks[j][1]) == len(blocks[i][1]):
            j += 1
        cs = [_conv(allp, trows, b) for _, b in blocks[i:j]]
        convs.append(cs[0] if j - i == 1 else
                     ops.stack_centered([c.table for c in cs], [c.quotient for c in cs], [c.src_prod for c in cs]))
        groups.append((i, j - i))
        i = j
    out_order = tuple(r for _, b in blocks for r in b)
    return KLSSTables(hybrid=hy, t_ring=_t_context(layout.t_primes, layout.n),
                      digit_convs=() if stacked is not None else digit_convs, digit_stacked=stacked,
                      block_convs=tuple(convs), layout=layout, rows=rows, special_rows=special,
                      digits=hy.digits, blocks=blocks, groups=tuple(groups), out_order=out_order)


@pytree_dataclass
class KLSSKey:
    """A KLSS switching key: data uint32[..., dnum, 2, D2, r', N], the key digit of block m of
    part j of hybrid digit l, exactly extended to T, NTT over T. Static: ``layout``."""

    data: jax.Array
    layout: KLSSLayout = static_field()

    def __repr__(self) -> str:
        s = self.data.shape
        return f"KLSSKey(dnum={s[-5]}, blocks={s[-3]}, T={s[-2]}, N={s[-1]})"


@functools.lru_cache(maxsize=64)
def _key_plan(layout: KLSSLayout):
    """Per block, the rows and the conversion block -> T (key generation)."""
    return tuple((b, _conv(layout.all_primes, b, layout.t_rows)) for b in layout.blocks)


def key_from_hybrid(key: hybrid.KeySwitchKey, ring: RNSContext, layout: KLSSLayout) -> KLSSKey:
    """The KLSS key of a hybrid key (the same first level): every part of every digit, on every
    block, as the centered integer modulo the block, extended to T, NTT over T."""
    if not isinstance(key, hybrid.KeySwitchKey):
        raise TypeError(f"key_from_hybrid: expected a hybrid KeySwitchKey, got {type(key).__name__}")
    if tuple(ring.primes) != layout.primes or ring.n != layout.n:
        raise ValueError("key_from_hybrid: the ring's primes or degree differ from the layout's")
    if key.alpha != layout.alpha or key.num_q != layout.num_q or key.data.shape[-2] != len(layout.primes):
        raise ValueError(f"key_from_hybrid: {key!r} (alpha={key.alpha}, num_q={key.num_q}) does not match {layout!r}")
    coeff = ops.intt(key.data, ring)                                          # [..., dnum, 2, R, N]
    parts = [ops.exact_conv(take_limbs(coeff, rows), conv) for rows, conv in _key_plan(layout)]
    y = jnp.stack(parts, axis=-3)                                              # [..., dnum, 2, D2, r', N]
    d2, t = y.shape[-3], y.shape[-2]
    flat = y.reshape(y.shape[:-3] + (d2 * t, y.shape[-1]))
    t_ring = _t_context(layout.t_primes, layout.n)
    out = ops.ntt(flat, t_ring, tuple(range(t)) * d2).reshape(y.shape)
    return KLSSKey(data=out, layout=layout)


def gen_klss_key(ring: RNSContext, s_from, s_to, *, num_q: int, alpha: int, sigma: float, rng,
                 tail: float = NOISE_TAIL, tables=None, error_factor: int = 1, a_seed: bytes | None = None,
                 klss_block=None, klss_t_count=None, klss_t_bits=31) -> KLSSKey:
    """A KLSS key switching x s_from into a ciphertext under s_to: a hybrid key
    (:func:`jax_fhe.rlwe.gen_switching_key`, noise times ``error_factor``; with ``tables``,
    restricted to theirs) converted by :func:`key_from_hybrid`. The options give the layout (with
    ``tables``: theirs). A KLSS key is not a uniform sample, so ``a_seed`` is refused."""
    if a_seed is not None:
        raise ValueError("gen_klss_key: KLSS keys cannot be stored as a seed (they are converted from a hybrid "
                         "key); generate them without seed_a/a_seed")
    if tables is not None:
        if not isinstance(tables, KLSSTables):
            raise TypeError(f"gen_klss_key: tables must be KLSSTables, got {type(tables).__name__}")
        layout = tables.layout
    else:
        layout = layout_for(ring.primes, num_q, alpha, ring.n, klss_block, klss_t_count, klss_t_bits)
    hkey = hybrid.gen_switching_key(ring, s_from, s_to, num_q=num_q, alpha=alpha, sigma=sigma, rng=rng, tail=tail,
                                    tables=None if tables is None else tables.hybrid, error_factor=error_factor)
    return key_from_hybrid(hkey, ring, layout)


def _derive_key(hkey, ring, *, num_q, alpha, klss_block=None, klss_t_count=None, klss_t_bits=31) -> KLSSKey:
    return key_from_hybrid(hkey, ring, layout_for(ring.primes, num_q, alpha, ring.n, klss_block, klss_t_count,
                                                  klss_t_bits))


# -- the stages ---------------------------------------------------------------------------------------

def _check_tables(tables, what: str) -> KLSSTables:
    if not isinstance(tables, KLSSTables):
        raise TypeError(f"{what}: expected KLSSTables, got {type(tables).__name__}")
    return tables


def _check_x(x, tables: KLSSTables, what: str):
    if x.ndim < 2 or x.shape[-2] != len(tables.rows):
        raise ValueError(f"{what}: data has shape {tuple(x.shape)}, expected [..., {len(tables.rows)}, N]")


def decompose(x, ring: RNSContext, tables: KLSSTables) -> jax.Array:
    """Every digit of x, exactly extended to T, NTT over T: uint32[..., L, N] (NTT, basis
    ``tables.rows``) -> uint32[..., d r', N] (digit i on limbs [i r', (i+1) r')). Hoistable:
    compute once to switch x under several keys."""
    tables = _check_tables(tables, "klss.decompose")
    _check_x(x, tables, "klss.decompose")
    coeff = ops.intt(x, ring, tables.rows)
    if tables.digit_stacked is not None:  # every digit converts to the same T rows: no padded outputs
        conv = ops.bconv_centered_stacked(coeff, tables.digit_stacked)
    else:
        parts = []
        for (_, drows), c in zip(tables.digits, tables.digit_convs):
            pos = [tables.rows.index(r) for r in drows]
            if pos == list(range(pos[0], pos[0] + len(pos))):
                parts.append(ops.exact_conv(coeff, c, limb_offset=pos[0]))
            else:
                parts.append(ops.exact_conv(take_limbs(coeff, pos), c))
        conv = jnp.concatenate(parts, axis=-2)
    t = tables.layout.t_count
    return ops.ntt(conv, tables.t_ring, tuple(range(t)) * len(tables.digits))


@functools.lru_cache(maxsize=256)
def _product_plan(layout: KLSSLayout, digit_ids: tuple, blocks: tuple, shared: bool):
    """The launches of the product over T: [(first digit, count, source, key_poly)] with up to
    ops.key_product.MAX_DIGITS digits each, and the output rows' moduli. Output row a r' + i
    (active block a, T prime i) sums digit x key[l, part, m, i]; part 1 is key_part = D2 r'
    polynomials after part 0 (KLSSKey.data flattened). ``shared``: each launch reads every
    digit from one operand (the whole decomposition), else from its own slice."""
    t, d2 = layout.t_count, len(layout.blocks)
    r = len(blocks) * t
    launches = []
    step = ops.key_product.MAX_DIGITS
    for i0 in range(0, len(digit_ids), step):
        ids = digit_ids[i0:i0 + step]
        source = np.zeros((len(ids), r), np.int32)
        key_poly = np.zeros_like(source)
        for i, l in enumerate(ids):
            for a, (m, _) in enumerate(blocks):
                for k in range(t):
                    source[i, a * t + k] = ((i0 + i) if shared else i) * t + k
                    key_poly[i, a * t + k] = ((l * 2) * d2 + m) * t + k
        launches.append((i0, len(ids), source, key_poly))
    moduli = np.asarray([layout.t_primes[k] for _ in blocks for k in range(t)], np.int64)
    return tuple(launches), moduli


def _check_key(key, tables: KLSSTables, what: str) -> KLSSKey:
    if not isinstance(key, KLSSKey):
        raise TypeError(f"{what}: expected a KLSSKey, got {type(key).__name__}")
    if key.layout != tables.layout:
        raise ValueError(f"{what}: the key was made for {key.layout!r}, the tables for {tables.layout!r}")
    lay = tables.layout
    want = (lay.dnum, 2, len(lay.blocks), lay.t_count, lay.n)
    if tuple(key.data.shape[-5:]) != want:
        raise ValueError(f"{what}: key data has shape {tuple(key.data.shape)}, expected [..., {want}]")
    return key


def _t_product(dec, key: KLSSKey, tables: KLSSTables) -> jax.Array:
    """U mod T for every active block, coefficient domain: uint32[..., 2, A r', N] (block a on
    limbs [a r', (a+1) r'))."""
    lay = tables.layout
    t = lay.t_count
    d = len(tables.digits)
    if dec.ndim < 2 or dec.shape[-2] != d * t:
        raise ValueError(f"klss: the decomposition has shape {tuple(dec.shape)}, expected [..., {d * t}, N]")
    # the kernel's sources are 8-bit (x rows + conversion rows below 256): every launch reads
    # the whole decomposition where it fits, else its own slice
    shared = d * t + 1 <= ops.key_product.MAX_SOURCE_ROWS
    launches, moduli = _product_plan(lay, tuple(l for l, _ in tables.digits), tables.blocks, shared)
    flat = key.data.reshape(key.data.shape[:-5] + (-1, key.data.shape[-1]))
    trows = tuple(range(t)) * len(tables.blocks)
    common = dict(key_part=len(lay.blocks) * t, moduli=moduli)
    unused = [jnp.zeros((1, dec.shape[-1]), jnp.uint32)]  # the kernel's conversion operand (no source reads it)
    if len(launches) == 1:
        _, _, source, key_poly = launches[0]
        return ops.digit_key_product(dec, unused, flat, source=source, key_poly=key_poly,
                                     intt=(tables.t_ring, trows), **common)
    acc = None
    for i0, cnt, source, key_poly in launches:
        src = dec if shared else dec[..., i0 * t:(i0 + cnt) * t, :]
        y = ops.digit_key_product(src, unused, flat, source=source, key_poly=key_poly, **common)
        acc = y if acc is None else ops.add_mod(acc, y, tables.t_ring, trows)
    return ops.intt(acc, tables.t_ring, trows)


def _block_limbs(u, tables: KLSSTables) -> jax.Array:
    """Every active block's U, exactly lifted from T and reduced modulo its active rows:
    uint32[..., 2, A r', N] -> uint32[..., 2, len(out_order), N] (coefficient domain)."""
    t = tables.layout.t_count
    parts = []
    for (a0, _), conv in zip(tables.groups, tables.block_convs):
        if isinstance(conv, ExactConv):
            parts.append(ops.exact_conv(u, conv, limb_offset=a0 * t))
        else:
            parts.append(ops.bconv_centered_stacked(u, conv, limb_offset=a0 * t))
    return parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=-2)


def _extended_coeff(x, dec, key, tables: KLSSTables) -> jax.Array:
    """Hybrid's key product before ModDown, coefficient domain, rows ``tables.out_order``."""
    _check_x(x, tables, "klss.key_switch")
    key = _check_key(key, tables, "klss.key_switch")
    return _block_limbs(_t_product(dec, key, tables), tables)


def _positions(tables: KLSSTables, rows) -> tuple:
    return tuple(tables.out_order.index(r) for r in rows)


def product_extended(x, dec, key: KLSSKey, ring: RNSContext, tables: KLSSTables) -> jax.Array:
    """The key product of x (with its decomposition ``dec``) over the extended basis without
    ModDown: uint32[..., 2, L + alpha_p, N] (NTT, rows ``tables.ext_rows``), bit for bit
    :func:`jax_fhe.rlwe.key_product_extended` with the hybrid key this key was made from."""
    tables = _check_tables(tables, "klss.product_extended")
    y = _extended_coeff(x, dec, key, tables)
    y = take_static(y, _positions(tables, tables.ext_rows), -2, max_runs=2)
    return ops.ntt(y, ring, tables.ext_rows)


def _mod_down_coeff(yq, yp, ring: RNSContext, tables: KLSSTables) -> jax.Array:
    """ModDown of the extended product given in the coefficient domain (basis rows yq, special
    rows yp): (yq - Conv_{P->Q}(yp)) P^-1, then NTT: uint32[..., L, N] (NTT). The same bits as
    hybrid's ModDown of the NTT-domain product (the NTT is linear mod each prime)."""
    hy = tables.hybrid
    conv = ops.exact_conv(yp, hy.mod_down)
    diff = ops.sub_mod(yq, conv, ring, tables.rows)
    return ops.ntt(ops.mul_limb_consts(diff, hy.p_inv, ring, tables.rows), ring, tables.rows)


def key_switch_decomposed(x, dec, key: KLSSKey, ring: RNSContext, tables: KLSSTables) -> jax.Array:
    """(c0, c1) = uint32[..., 2, L, N] (NTT) with c0 + c1 s = x s' + (small), given x's
    decomposition: ModDown of the product in the coefficient domain (the special rows need no
    INTT), one NTT. Bit for bit hybrid's key switch with the same first-level key."""
    tables = _check_tables(tables, "klss.key_switch")
    y = _extended_coeff(x, dec, key, tables)
    yq = take_static(y, _positions(tables, tables.rows), -2, max_runs=1)
    yp = take_static(y, _positions(tables, tables.special_rows), -2, max_runs=1)
    return _mod_down_coeff(yq, yp, ring, tables)


def key_switch(x, key: KLSSKey, ring: RNSContext, tables: KLSSTables) -> jax.Array:
    """:func:`key_switch_decomposed` of x with its :func:`decompose`."""
    return key_switch_decomposed(x, decompose(x, ring, tables), key, ring, tables)


def mod_down(y, ring: RNSContext, tables: KLSSTables) -> jax.Array:
    """Hybrid's ModDown (uint32[..., L + alpha_p, N] -> uint32[..., L, N], NTT)."""
    return hybrid.mod_down(y, ring, _check_tables(tables, "klss.mod_down").hybrid)


def lift_extended(x, ring: RNSContext, tables: KLSSTables) -> jax.Array:
    """Hybrid's lift: P x on the basis rows, 0 on the special rows."""
    return hybrid.lift_extended(x, ring, _check_tables(tables, "klss.lift_extended").hybrid)


# -- costs ------------------------------------------------------------------------------------------

def op_counts(tables: KLSSTables) -> dict:
    """Operation counts of one key switch at the tables' basis, KLSS against hybrid
    (notes/klss.md §2.5; polynomials of N words): NTTs (forward and inverse, every basis),
    key-product multiply-adds, key polynomials read (= key size in polynomials)."""
    tables = _check_tables(tables, "op_counts")
    lay = tables.layout
    t, d, a = lay.t_count, len(tables.digits), len(tables.blocks)
    nl, k = len(tables.rows), len(tables.special_rows)
    ext = nl + k
    hy_ntt = nl + sum(ext - len(dr) for _, dr in tables.digits) + 2 * k + 2 * nl
    return {
        "klss": {"ntt": nl + d * t + 2 * a * t + 2 * nl, "mults": 2 * d * a * t, "key_polys": 2 * d * a * t,
                 "key_polys_stored": 2 * lay.dnum * len(lay.blocks) * t},
        "hybrid": {"ntt": hy_ntt, "mults": 2 * d * ext, "key_polys": 2 * d * ext,
                   "key_polys_stored": 2 * lay.dnum * len(lay.primes)},
    }


def _make_tables(primes, rows, special_rows, alpha, *, n, num_q, klss_block=None, klss_t_count=None,
                 klss_t_bits=31):
    return make_klss_tables(rows, special_rows, layout_for(primes, num_q, alpha, n, klss_block, klss_t_count,
                                                           klss_t_bits))


METHOD = keyswitch.register(keyswitch.Method(
    name="klss", tables_type=KLSSTables, key_type=KLSSKey, make_tables=_make_tables, gen_key=gen_klss_key,
    decompose=decompose, product_extended=product_extended, mod_down=mod_down, switch=key_switch_decomposed,
    lift_extended=lift_extended, options=OPTIONS, needs_chain=True, derive_key=_derive_key))
