"""Hybrid key switching (Han–Ki, CT-RSA 2020) over RNS limbs with special primes P.

Notation. A ring context holds rows 0..T-1; ciphertext ("q") rows come first and the special
("p") rows follow. Data at a basis B (a tuple of q rows) is ``uint32[..., L, N]`` in the NTT
domain, limb i on row B[i]. Digits are groups of ``alpha`` consecutive *global* q rows
(digit d = rows [d alpha, (d+1) alpha)); at basis B digit d holds the rows of B in that range,
so digit boundaries do not move when a level drops primes.

A switching key from secret s' to secret s has, for every digit d, a pair over all rows

    key_d = (b_d, a_d),   b_d = -a_d s + e_d + P [1 on the rows of digit d, 0 elsewhere] s'.

Key switching of x (at basis B) is three stages, each a separate function so that fused
kernels can replace them one by one:

1. :func:`mod_up`: for every digit, INTT its limbs, base-convert them (centered,
   :func:`jax_fhe.ops.exact_conv`) to every other row of B and to P, NTT. Output
   ``uint32[..., beta, L + alpha_p, N]`` over the extended basis B + P. Digit d of x is the
   integer [x]_{Q_d} in [-Q_d/2, Q_d/2), so on the rows of digit d it equals x. Centering
   matters: with the plain fast conversion (values in [0, alpha Q_d)) the digits have a large
   mean, and sum_d x_d e_d / P concentrates in the slots near X = 1 (measured worst-slot
   error of a rotation at N = 2^12: 2^-22.6 instead of 2^-27.4).
2. :func:`key_inner_product`: sum_d mod_up(x)_d * key_d over B + P: ``uint32[..., 2, L+a, N]``.
   Its phase c0 + c1 s equals P x s' + sum_d x_d e_d.
3. :func:`mod_down`: divide by P with rounding: INTT the P limbs, base-convert them (exactly,
   centered: :func:`jax_fhe.ops.exact_conv`) to B, NTT, subtract, multiply by P^-1. The result
   ``uint32[..., 2, L, N]`` decrypts under s to x s' + (small).

:func:`key_switch` computes what the three chained compute, bit for bit, without assembling
the extended digits: :func:`mod_up_convs` (one INTT launch for every digit, each digit's
centered BConv and NTT), then :func:`key_switch_convs`, where the fused key inner product
(:func:`jax_fhe.ops.digit_key_product`) reads each digit's limbs in place, the special rows go
through ModDown's conversion and the basis rows' store does the subtract-and-scale. The three
stages stay as the reference (tests compare against them); :func:`key_product_extended` is the
fused product without ModDown (double hoisting). Tables for one basis are a
:class:`HybridTables` pytree (built once per level with :func:`make_hybrid_tables`); keys are
:class:`KeySwitchKey` pytrees. Everything works under ``jax.jit`` and ``jax.vmap``; tables and
keys are arguments. The method registers itself as "hybrid" with :mod:`.keyswitch`.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import ops
from ..ops import take_limbs
from ..ops.bconv import MAX_STACKED
from ..rns.context import RNSContext
from ..rns.crt import MAX_TERMS, ExactConv, make_exact_conv
from ..rns.pytree import HostTable, host_u32, pytree_dataclass, static_field
from ..rns.sampling import HostRandom, as_host_random, record_uniform_seed
from ..rns.shoup import device_u32
from . import keyswitch, plainmod
from .encryption import NOISE_TAIL, encrypt_sk, seed_record
from .params import digit_rows


# -- tables and keys ----------------------------------------------------------------------------

@pytree_dataclass
class HybridTables:
    """Key-switching tables for one basis.

    mod_up:   one :class:`ExactConv` per digit: digit rows -> (other rows of the basis) + P.
    mod_down: :class:`ExactConv` P -> basis rows.
    p_inv:    uint32[L]  P^-1 mod each basis prime.
    mod_up_stacked: the ``mod_up`` tables stacked for one launch
              (:func:`jax_fhe.ops.bconv_centered_stacked`, :func:`stack_digits`; digits of
              unequal sizes padded), or None where a digit's rows are not consecutive in the
              basis or the key product could not index the result (then each digit converts
              alone).
    plain:    None, or the :class:`jax_fhe.rlwe.plainmod.PlainCorrection` of ModDown for a
              plaintext modulus t (BGV): ModDown then keeps the phase mod t.
    Static: ``rows`` (the basis), ``special_rows`` (P), ``digits`` ((digit index, rows), ...).
    """

    mod_up: tuple
    mod_down: ExactConv
    p_inv: HostTable = static_field()
    mod_up_stacked: object
    plain: object
    rows: tuple = static_field()
    special_rows: tuple = static_field()
    digits: tuple = static_field()

    @property
    def ext_rows(self) -> tuple:
        """The extended basis: the basis rows, then the special rows."""
        return self.rows + self.special_rows

    @property
    def plain_modulus(self):
        """The plaintext modulus t whose phase ModDown keeps (None: plain rounding)."""
        return None if self.plain is None else self.plain.t

    def __repr__(self) -> str:
        t = "" if self.plain is None else f", t={self.plain.t}"
        return (f"HybridTables(L={len(self.rows)}, alpha_p={len(self.special_rows)}, "
                f"beta={len(self.digits)}{t})")


def make_hybrid_tables(primes: Sequence[int], rows: Sequence[int], special_rows: Sequence[int],
                       alpha: int, plain_modulus: int | None = None) -> HybridTables:
    """Tables for key switching data on ``rows`` of ``primes`` with special rows
    ``special_rows`` and digits of ``alpha`` global rows. With ``plain_modulus`` t, ModDown
    divides by P with the t-correction (:mod:`.plainmod`): BGV, whose keys carry the noise t e,
    so that key switching adds t times a small error and keeps the phase mod t."""
    rows, special = tuple(int(r) for r in rows), tuple(int(r) for r in special_rows)
    if set(rows) & set(special):
        raise ValueError("the basis and the special rows overlap")
    if special and min(special) < max(rows):
        raise ValueError("special rows must come after every ciphertext row")
    digits = digit_rows(rows, alpha)
    ext = rows + special
    mod_up = []
    for _, drows in digits:
        others = [r for r in ext if r not in drows]
        mod_up.append(make_exact_conv(primes, drows, others))
    return HybridTables(mod_up=tuple(mod_up), mod_down=make_exact_conv(primes, special, rows),
                        p_inv=host_u32(_p_inverse(tuple(int(q) for q in primes), rows, special)),
                        mod_up_stacked=_stack_mod_up(rows, digits, mod_up),
                        plain=(None if plain_modulus is None else
                               plainmod.make_plain_correction(primes, special, rows, plain_modulus)),
                        rows=rows, special_rows=special, digits=digits)


def stack_digits(rows: tuple, digits: tuple, convs: Sequence[ExactConv]):
    """The digits' centered conversions (one :class:`ExactConv` per digit, from its rows) as
    one launch's tables (:func:`jax_fhe.ops.stack_centered`), or None where a digit's rows are
    not consecutive in the basis ``rows`` or there is one digit. Each digit reads a window of
    W limbs (W = the largest digit) that holds its own rows: from its first row, or, where that
    would run past the basis, the last W limbs. Digits of unequal sizes (a level that cuts one)
    are padded with zero table entries; the per-digit fixed-point precision is kept."""
    if not 2 <= len(digits) <= MAX_STACKED:
        return None
    w = max(len(drows) for _, drows in digits)
    if len(rows) < w:
        return None
    starts, leads = [], []
    for _, drows in digits:
        pos = [rows.index(r) for r in drows]
        if pos != list(range(pos[0], pos[0] + len(pos))):
            return None
        start = min(pos[0], len(rows) - w)
        starts.append(start)
        leads.append(pos[0] - start)
    return ops.stack_centered([c.table for c in convs], [c.quotient for c in convs], [c.src_prod for c in convs],
                              starts=starts, leads=leads)


def _stack_mod_up(rows: tuple, digits: tuple, mod_up: Sequence[ExactConv]):
    """The digits' ModUp conversions as one launch's tables (``HybridTables.mod_up_stacked``,
    :func:`stack_digits`), or None where one launch cannot do them or the fused key product
    could not index the stacked result (8-bit sources, at most MAX_DIGITS digits)."""
    if len(digits) > ops.key_product.MAX_DIGITS:
        return None
    stacked = stack_digits(rows, digits, mod_up)
    if stacked is None or len(rows) + stacked.digits * stacked.lout > ops.key_product.MAX_SOURCE_ROWS:
        return None
    return stacked


def _stacked_rows(tables: HybridTables) -> tuple:
    """The rows of the stacked ModUp conversion's limbs: each digit's targets, then its padding
    limbs (zeros) on its first target row."""
    st = tables.mod_up_stacked
    return sum((c.dst_rows + (c.dst_rows[0],) * (st.lout - len(c.dst_rows)) for c in tables.mod_up), ())


@functools.lru_cache(maxsize=256)
def _p_inverse(primes: tuple, rows: tuple, special_rows: tuple) -> tuple:
    """P^-1 mod each prime of ``rows``, P the product of the ``special_rows`` primes: ModDown's
    scale (a device table in HybridTables.p_inv, a kernel attribute in key_switch_convs)."""
    big_p = math.prod(int(primes[r]) for r in special_rows)
    return tuple(pow(big_p, -1, int(primes[r])) for r in rows)


@pytree_dataclass
class KeySwitchKey:
    """A hybrid switching key: data uint32[dnum, 2, T, N] = (b_d, a_d) for every digit d over
    every row of the ring context (q rows then special rows), NTT domain.
    Static: ``alpha`` (rows per digit), ``num_q`` (number of q rows); ``rows``: None, or the
    ring rows the data holds in this order (T = len(rows)) when the key is restricted to the
    levels it serves (:func:`restrict_key`)."""

    data: jax.Array
    alpha: int = static_field()
    num_q: int = static_field()
    rows: tuple | None = static_field(default=None)

    @property
    def dnum(self) -> int:
        """Number of digits the key holds."""
        return self.data.shape[-4]

    def held_rows(self) -> tuple:
        """The ring rows of the data's T axis, in order."""
        return tuple(range(self.data.shape[-2])) if self.rows is None else self.rows

    def __repr__(self) -> str:
        part = "" if self.rows is None else ", restricted"
        return f"KeySwitchKey(dnum={self.dnum}, rows={self.data.shape[-2]}, N={self.data.shape[-1]}{part})"


def restrict_key(key: KeySwitchKey, tables) -> KeySwitchKey:
    """The part of ``key`` that switches with ``tables`` (one :class:`HybridTables` or a sequence
    of them, e.g. every level a key serves: a chain whose levels do not nest their primes needs
    the union): :func:`restrict_key_rows` of their basis and special rows."""
    many = tuple(tables) if isinstance(tables, (list, tuple)) else (tables,)
    if not many or not all(isinstance(t, HybridTables) for t in many):
        raise TypeError(f"restrict_key: expected HybridTables or a sequence of them, got {tables!r:.80}")
    return restrict_key_rows(key, set().union(*(t.rows for t in many)),
                             set().union(*(t.special_rows for t in many)))


def restrict_key_rows(key: KeySwitchKey, rows, special_rows) -> KeySwitchKey:
    """The part of ``key`` that switches bases within the q rows ``rows`` with the special rows
    ``special_rows``: the digits up to the last that holds one of ``rows`` (digit d = q rows
    [d alpha, (d+1) alpha)) on those rows (a key serving levels 0..14 of n16-boot holds 2 of 4
    digits on 35 of 59 rows: 30% of the memory). Key switching with it gives the same bits as
    with the whole key; tables that need a row or digit it lacks are refused (ValueError). A key
    with nothing to cut is returned as it is."""
    if not isinstance(key, KeySwitchKey):
        raise TypeError(f"restrict_key: expected a KeySwitchKey, got {type(key).__name__}")
    held = key.held_rows()
    want = tuple(sorted(set(rows) | set(special_rows)))
    digits = max(d for d, _ in digit_rows(rows, key.alpha)) + 1
    missing = sorted(set(want) - set(held))
    if missing or digits > key.dnum:
        raise ValueError(f"restrict_key: {key!r} lacks rows {missing} or digits up to {digits - 1} of these tables")
    if want == held and digits == key.dnum:
        return key                                # nothing to cut
    pos = np.asarray([held.index(r) for r in want])
    return KeySwitchKey(data=jnp.take(key.data[..., :digits, :, :, :], pos, axis=-2), alpha=key.alpha,
                        num_q=key.num_q, rows=want)


def gen_switching_key(ring: RNSContext, s_from, s_to, *, num_q: int, alpha: int, sigma: float,
                      rng: HostRandom | None, tail: float = NOISE_TAIL, tables=None,
                      error_factor: int = 1, a_seed: bytes | None = None) -> KeySwitchKey:
    """A key switching a ciphertext component multiplied by ``s_from`` into one under ``s_to``.

    s_from, s_to: uint32[T, N] NTT-domain secrets over every row of ``ring`` (rows 0..num_q-1
    are the q primes, the rest the special primes). Digit d of the key is an encryption under
    s_to of P [1 on the rows of digit d] s_from (:func:`jax_fhe.rlwe.encrypt_sk`). Without
    ``tables`` it covers every row (P = every special prime) and serves every level. With
    ``tables`` (:class:`HybridTables`) it covers only their basis and special rows, with P the
    product of *their* special primes, and is zero elsewhere: a key whose modulus must stay small
    (e.g. bootstrapping's dense-to-sparse key, an RLWE sample under a sparse secret, secure only
    over a small modulus) serves those tables alone. ``error_factor``: the key's noise is
    multiplied by it (BGV: t; use it with tables made with that plain_modulus). ``a_seed``
    (bytes): the a parts come from ``HostRandom.public(a_seed)``; the key then carries a
    :class:`jax_fhe.rns.SeededUniform` record, and :mod:`jax_fhe.io` stores the seed instead of
    them (half the size).
    """
    rng = as_host_random(rng)
    primes = ring.primes
    t = len(primes)
    dnum = -(-num_q // alpha)
    if tables is None:
        rows, special = tuple(range(num_q)), tuple(range(num_q, t))
    else:
        if not isinstance(tables, HybridTables):
            raise TypeError(f"gen_switching_key: tables must be HybridTables, got {type(tables).__name__}")
        rows, special = tuple(tables.rows), tuple(tables.special_rows)
    active = rows + special
    big_p = math.prod(primes[r] for r in special)
    gadget = np.zeros((dnum, len(active)), dtype=np.uint64)
    for i, r in enumerate(rows):
        gadget[r // alpha, i] = big_p % primes[r]
    g = jnp.broadcast_to(device_u32(gadget)[:, :, None], (dnum, len(active), ring.n))
    sf, st = (take_limbs(s, active) if active != tuple(range(t)) else s for s in (s_from, s_to))
    msg = ops.mul_mod(g, jnp.broadcast_to(sf, g.shape), ring, active)
    data = encrypt_sk(msg, st, ring, active, rng, sigma, tail, error_factor, a_seed=a_seed)  # [dnum, 2, |active|, N]
    partial = active != tuple(range(t))
    if partial:
        full = jnp.zeros((dnum, 2, t, ring.n), jnp.uint32)
        data = full.at[:, :, np.asarray(active)].set(data)
    key = KeySwitchKey(data=data, alpha=int(alpha), num_q=int(num_q))
    if a_seed is not None:
        record_uniform_seed(key, seed_record(a_seed, ring, active, (dnum,), limbs=t if partial else None))
    return key


# -- the three stages -----------------------------------------------------------------------------

def _check_basis(x, tables: HybridTables, what: str, extended: bool = False):
    if not isinstance(tables, HybridTables):
        raise TypeError(f"{what}: expected HybridTables, got {type(tables).__name__}")
    want = len(tables.ext_rows) if extended else len(tables.rows)
    if x.ndim < 2 or x.shape[-2] != want:
        raise ValueError(f"{what}: data has shape {tuple(x.shape)}, expected [..., {want}, N]")


def _mod_up_digits(x, ring: RNSContext, tables: HybridTables) -> list:
    """ModUp of every digit, unassembled: [(xd, conv_d)] with xd = uint32[..., |digit|, N] the
    digit's own limbs and conv_d = uint32[..., L + alpha_p - |digit|, N] its conversion to the
    other rows (``tables.mod_up[i].dst_rows``, in extended-basis order), both NTT domain."""
    _check_basis(x, tables, "mod_up")
    coeff = ops.intt(x, ring, tables.rows)  # every digit's limbs in one launch
    out = []
    for (_, drows), conv_tables in zip(tables.digits, tables.mod_up):
        pos = [tables.rows.index(r) for r in drows]
        xd = take_limbs(x, pos)
        if pos == list(range(pos[0], pos[0] + len(pos))):  # the usual case: read in place
            c = ops.exact_conv(coeff, conv_tables, limb_offset=pos[0])
        else:
            c = ops.exact_conv(take_limbs(coeff, pos), conv_tables)
        out.append((xd, ops.ntt(c, ring, conv_tables.dst_rows)))
    return out


def mod_up(x, ring: RNSContext, tables: HybridTables) -> jax.Array:
    """ModUp of every digit: uint32[..., L, N] (NTT, basis ``tables.rows``) ->
    uint32[..., beta, L + alpha_p, N] (NTT, basis ``tables.ext_rows``)."""
    ext = tables.ext_rows
    outs = []
    for (_, drows), (xd, conv) in zip(tables.digits, _mod_up_digits(x, ring, tables)):
        order = drows + tuple(r for r in ext if r not in drows)
        outs.append(take_limbs(jnp.concatenate([xd, conv], axis=-2), [order.index(r) for r in ext]))
    return jnp.stack(outs, axis=-3)


def _check_key(key, ring: RNSContext, tables: HybridTables, what: str) -> None:
    if not isinstance(key, KeySwitchKey):
        raise TypeError(f"{what}: expected a KeySwitchKey, got {type(key).__name__}")
    ids = [d for d, _ in tables.digits]
    t = len(ring.primes) if key.rows is None else len(key.rows)
    if max(ids) >= key.dnum or key.data.shape[-2] != t or key.data.shape[-1] != ring.n:
        raise ValueError(f"{what}: {key!r} does not match the tables/context")
    if key.rows is not None and not set(tables.ext_rows) <= set(key.rows):
        raise ValueError(f"{what}: {key!r} is restricted to rows {key.rows} and lacks "
                         f"{sorted(set(tables.ext_rows) - set(key.rows))} of this level (restrict_key)")


def _mul_key(u, k, ring: RNSContext, rows) -> jax.Array:
    """u: uint32[..., R, N] times the key part k: uint32[2, R, N] -> uint32[..., 2, R, N]."""
    u = jnp.expand_dims(u, -3)
    shape = jnp.broadcast_shapes(u.shape, k.shape)
    return ops.mul_mod(jnp.broadcast_to(u, shape), jnp.broadcast_to(k, shape), ring, rows)


def key_inner_product(ext, key: KeySwitchKey, ring: RNSContext, tables: HybridTables) -> jax.Array:
    """sum_d ext[..., d, :, :] * key_d: uint32[..., beta, L+a, N] -> uint32[..., 2, L+a, N]."""
    _check_key(key, ring, tables, "key_inner_product")
    _check_basis(ext, tables, "key_inner_product", extended=True)
    ids = [d for d, _ in tables.digits]
    if ext.ndim < 3 or ext.shape[-3] != len(ids):
        raise ValueError(f"key_inner_product: expected {len(ids)} digits, got shape {tuple(ext.shape)}")
    rows = tables.ext_rows
    held = key.held_rows()
    pos = [held.index(r) for r in rows]
    acc = None
    for i, d in enumerate(ids):
        t = _mul_key(ext[..., i, :, :], take_limbs(key.data[..., d, :, :, :], pos), ring, rows)
        acc = t if acc is None else ops.add_mod(acc, t, ring, rows)
    return acc


def _mod_down_parts(yq, yp, ring: RNSContext, tables: HybridTables) -> jax.Array:
    """:func:`mod_down` of y given as its basis rows yq: uint32[..., L, N] and its special rows
    yp: uint32[..., alpha_p, N]."""
    yp = ops.intt(yp, ring, tables.special_rows)
    conv = ops.exact_conv(yp, tables.mod_down)
    if tables.plain is not None:
        conv = plainmod.correct(conv, yp, tables.plain, ring)
    conv = ops.ntt(conv, ring, tables.rows)
    diff = ops.sub_mod(yq, conv, ring, tables.rows)
    return ops.mul_limb_consts(diff, tables.p_inv, ring, tables.rows)


def mod_down(y, ring: RNSContext, tables: HybridTables) -> jax.Array:
    """Divide by P with rounding: uint32[..., L + alpha_p, N] -> uint32[..., L, N] (NTT)."""
    _check_basis(y, tables, "mod_down", extended=True)
    nl = len(tables.rows)
    return _mod_down_parts(y[..., :nl, :], y[..., nl:, :], ring, tables)


def mod_up_convs(x, ring: RNSContext, tables: HybridTables) -> list:
    """The part of ModUp that is computed: for every digit, its limbs of x converted to the
    other rows of the extended basis, ``uint32[..., L + alpha_p - |digit|, N]`` in the order of
    ``tables.mod_up[i].dst_rows`` (NTT domain). With x itself (the digits' own limbs) this is
    the whole of :func:`mod_up`, unassembled; :func:`key_switch_convs` takes it. Compute it
    once to switch one x under several keys (hoisted rotations).

    Returns one array per digit; or, with ``tables.mod_up_stacked`` (and the fused centered
    conversion), a list of one array ``uint32[..., beta Lout, N]`` holding every digit's
    conversion in digit order, each padded with zero limbs to Lout = L + alpha_p - (the
    smallest digit's size), made by one INTT, one BConv and one NTT launch (the ModUp of all
    digits batched, as Theodosian batches stage 1)."""
    if tables.mod_up_stacked is not None:
        _check_basis(x, tables, "mod_up")
        coeff = ops.intt(x, ring, tables.rows)
        conv = ops.bconv_centered_stacked(coeff, tables.mod_up_stacked)
        return [ops.ntt(conv, ring, _stacked_rows(tables))]
    return [conv for _, conv in _mod_up_digits(x, ring, tables)]


@functools.lru_cache(maxsize=256)
def _product_plan(primes: tuple, tables_rows: tuple, digits: tuple, conv_rows: tuple,
                  key_rows: tuple, stride: int, out_rows: tuple):
    """Static plan of :func:`jax_fhe.ops.digit_key_product` for output rows ``out_rows``:
    (source int32[D, R], key_poly int32[D, R], moduli int64[R]); ``key_rows``: the ring rows of
    the key's T axis (KeySwitchKey.data is [dnum, 2, T, N]: part 1 of digit d is T polynomials
    after its part 0). ``stride``:
    0 for one conversion array per digit; else the conversions are one array, digit i's limbs
    from i * stride (:func:`mod_up_convs`)."""
    lx = len(tables_rows)
    source = np.zeros((len(digits), len(out_rows)), np.int32)
    key_poly = np.zeros_like(source)
    for i, ((d, drows), dst) in enumerate(zip(digits, conv_rows)):
        base = lx + i * stride
        for j, r in enumerate(out_rows):
            source[i, j] = tables_rows.index(r) if r in drows else base + dst.index(r)
            key_poly[i, j] = 2 * d * len(key_rows) + key_rows.index(r)
    moduli = np.asarray([primes[r] for r in out_rows], np.int64)
    return source, key_poly, moduli


def _key_product(x, convs: Sequence, key: KeySwitchKey, ring: RNSContext, tables: HybridTables,
                 out_rows, **epilogue) -> jax.Array:
    """One launch of the fused key inner product (:func:`jax_fhe.ops.digit_key_product`) over
    ``out_rows``, reading every digit's limbs where ModUp left them (x, convs) and each key
    polynomial once for the whole batch. ``epilogue``: the product's ModDown options."""
    _check_key(key, ring, tables, "key_switch")
    _check_basis(x, tables, "key_switch")
    conv_rows = tuple(c.dst_rows for c in tables.mod_up)
    stacked = len(convs) == 1 and len(tables.digits) > 1
    if stacked:
        if tables.mod_up_stacked is None:
            raise ValueError("key_switch: one ModUp conversion for several digits, but these tables do not stack them")
        stride = tables.mod_up_stacked.lout
        want = len(tables.digits) * stride
        if convs[0].ndim < 2 or convs[0].shape[-2] != want:
            raise ValueError(f"key_switch: the stacked ModUp conversion has shape {tuple(convs[0].shape)}, "
                             f"expected [..., {want}, N]")
    elif len(convs) != len(tables.digits):
        raise ValueError(f"key_switch: expected {len(tables.digits)} ModUp conversions, got {len(convs)}")
    t = key.data.shape[-2]
    held = key.held_rows()
    # [dnum, 2, T, N] -> [2 dnum T, N]; leading (batch) axes stay (e.g. a key batch from vmap)
    flat_key = key.data.reshape(key.data.shape[:-4] + (-1, key.data.shape[-1]))
    step = ops.key_product.MAX_DIGITS
    if len(tables.digits) <= step:
        source, key_poly, moduli = _product_plan(ring.primes, tables.rows, tables.digits, conv_rows, held,
                                                 stride if stacked else 0, tuple(out_rows))
        return ops.digit_key_product(x, convs, flat_key, source=source, key_poly=key_poly, key_part=t,
                                     moduli=moduli, **epilogue)
    # more digits than one launch takes (never stacked): launches of `step` digits summed, then the
    # epilogue in jnp and the transforms (the same bits as one launch: every sum is reduced)
    out_rows = tuple(out_rows)
    acc = None
    for i0 in range(0, len(tables.digits), step):
        sl = slice(i0, i0 + step)
        source, key_poly, moduli = _product_plan(ring.primes, tables.rows, tables.digits[sl], conv_rows[sl], held,
                                                 0, out_rows)
        y = ops.digit_key_product(x, list(convs[sl]), flat_key, source=source, key_poly=key_poly, key_part=t,
                                  moduli=moduli)
        acc = y if acc is None else ops.add_mod(acc, y, ring, out_rows)
    if "intt" in epilogue:
        return ops.intt(acc, ring, out_rows)
    if "sub" in epilogue:
        sub = epilogue["sub"]
        if "sub_ntt" in epilogue:
            sub = ops.ntt(sub, ring, out_rows)
        diff = ops.sub_mod(acc, jnp.broadcast_to(sub, acc.shape), ring, out_rows)
        return ops.mul_limb_consts(diff, device_u32(epilogue["scale"]), ring, out_rows)
    return acc


def key_switch_convs(x, convs: Sequence, key: KeySwitchKey, ring: RNSContext,
                     tables: HybridTables) -> jax.Array:
    """:func:`key_switch` of x given its ModUp conversions ``convs`` (:func:`mod_up_convs`).

    Two launches of the fused key inner product: first the special rows, whose product's
    inverse NTT (ModDown's first step) is the launch's own epilogue (on the GPU, for one
    ciphertext, the INTT's first phase computes the product where it would load it); ModDown
    converts them to the basis (centered BConv); then the basis rows, whose launch subtracts
    the forward NTT of that conversion and multiplies by P^-1 (on the GPU the NTT's second
    phase evaluates the product). The extended digits, the basis rows of the inner product and
    the transformed conversion are never written.
    """
    yp_coeff = _key_product(x, convs, key, ring, tables, tables.special_rows,
                            intt=(ring, tables.special_rows))                 # [..., 2, alpha_p, N]
    conv = ops.exact_conv(yp_coeff, tables.mod_down)                          # [..., 2, L, N]
    if tables.plain is not None:
        conv = plainmod.correct(conv, yp_coeff, tables.plain, ring)
    scale = _p_inverse(ring.primes, tables.rows, tables.special_rows)
    return _key_product(x, convs, key, ring, tables, tables.rows, sub=conv, scale=scale,
                        sub_ntt=(ring, tables.rows))


def key_product_extended(x, convs: Sequence, key: KeySwitchKey, ring: RNSContext,
                         tables: HybridTables) -> jax.Array:
    """The key inner product of x (given its ModUp conversions) over the extended basis,
    without ModDown: uint32[..., 2, L + alpha_p, N] (NTT, rows ``tables.ext_rows``). Equal to
    ``key_inner_product(mod_up(x))``; :func:`mod_down` of it equals :func:`key_switch_convs`."""
    return _key_product(x, convs, key, ring, tables, tables.ext_rows)


def lift_extended(x, ring: RNSContext, tables: HybridTables) -> jax.Array:
    """P x on the basis rows, 0 on the special rows: uint32[..., L, N] -> uint32[..., L + alpha_p, N]
    (NTT). ModDown divides it back to x exactly, so it can be added to key products before one
    ModDown (Cheddar's PseudoModUp)."""
    _check_basis(x, tables, "lift_extended")
    scale = jnp.asarray(np.asarray(_p_mod(ring.primes, tables.rows, tables.special_rows), np.uint32))
    px = ops.mul_limb_consts(x, scale, ring, tables.rows)
    zeros = jnp.zeros(x.shape[:-2] + (len(tables.special_rows), x.shape[-1]), jnp.uint32)
    return jnp.concatenate([px, zeros], axis=-2)


@functools.lru_cache(maxsize=256)
def _p_mod(primes: tuple, rows: tuple, special_rows: tuple) -> tuple:
    big_p = math.prod(int(primes[r]) for r in special_rows)
    return tuple(big_p % int(primes[r]) for r in rows)


def key_switch(x, key: KeySwitchKey, ring: RNSContext, tables: HybridTables) -> jax.Array:
    """(c0, c1) = uint32[..., 2, L, N] with c0 + c1 s = x s' + (small), for x: uint32[..., L, N]
    and ``key`` switching from s' to s.

    Equal, bit for bit, to ``mod_down(key_inner_product(mod_up(x)))``, but the extended digits
    uint32[..., beta, L+a, N] are never assembled (:func:`key_switch_convs`, which checks the key).
    """
    return key_switch_convs(x, mod_up_convs(x, ring, tables), key, ring, tables)


# -- ModDown merged with a rescale ----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _DividePlan:
    """Static tables of dividing extended-basis data by P D (D: rows of the basis a rescale
    drops): ``conv`` the centered conversion from S = D + P to the kept rows B' = B - D;
    ``p_mod`` P mod each prime of D; ``pd_inv`` (P D)^-1 and ``d_inv`` D^-1 mod each prime of B'."""

    conv: ExactConv
    p_mod: HostTable
    pd_inv: HostTable
    d_inv: HostTable
    src: tuple
    keep: tuple
    drop_pos: tuple
    keep_pos: tuple


@functools.lru_cache(maxsize=256)
def _divide_plan(primes: tuple, rows: tuple, special_rows: tuple, drop_rows: tuple) -> _DividePlan:
    q = [int(v) for v in primes]
    keep = tuple(r for r in rows if r not in drop_rows)
    src = drop_rows + special_rows
    big_p = math.prod(q[r] for r in special_rows)
    big_d = math.prod(q[r] for r in drop_rows)
    return _DividePlan(conv=make_exact_conv(q, src, keep), p_mod=host_u32([big_p % q[r] for r in drop_rows]),
                       pd_inv=host_u32([pow(big_p * big_d, -1, q[r]) for r in keep]),
                       d_inv=host_u32([pow(big_d, -1, q[r]) for r in keep]), src=src, keep=keep,
                       drop_pos=tuple(rows.index(r) for r in drop_rows),
                       keep_pos=tuple(rows.index(r) for r in keep))


def can_divide(tables: HybridTables, drop_rows) -> bool:
    """Whether :func:`key_switch_divide` / :func:`mod_down_divide` can divide by P D for the
    rows ``drop_rows`` of the basis: distinct basis rows, not all of them, a plain ModDown (no
    plaintext-modulus correction) and at most ``rns.crt.MAX_TERMS`` primes in D + P (one
    centered conversion)."""
    drop = tuple(int(r) for r in drop_rows)
    return (tables.plain is None and bool(drop) and len(set(drop)) == len(drop)
            and set(drop) < set(tables.rows) and len(drop) + len(tables.special_rows) <= MAX_TERMS)


def _plan_for(ring: RNSContext, tables: HybridTables, drop_rows, what: str) -> _DividePlan:
    if not isinstance(tables, HybridTables):
        raise TypeError(f"{what}: expected HybridTables, got {type(tables).__name__}")
    if not can_divide(tables, drop_rows):
        raise ValueError(f"{what}: cannot divide by P D for rows {tuple(drop_rows)} of the basis "
                         f"{tables.rows} (they must be basis rows, at most {MAX_TERMS} primes with P, "
                         f"and ModDown must be plain)")
    return _divide_plan(tuple(int(v) for v in ring.primes), tables.rows, tables.special_rows,
                        tuple(int(r) for r in drop_rows))


def _add_divided(out, add, plan: _DividePlan, ring: RNSContext):
    """out + add D^-1 on the kept rows (the part P add of the dividend, divided by P D)."""
    if add is None:
        return out
    term = ops.mul_limb_consts(take_limbs(add, plan.keep_pos), plan.d_inv, ring, plan.keep)
    return ops.add_mod(*jnp.broadcast_arrays(out, term), ring, plan.keep)


def _add_lifted(ys, add_d, plan: _DividePlan, ring: RNSContext):
    """ys (rows S = D + P) plus P add_d on its first |D| rows (add_d: add's D rows, in the
    domain of ys)."""
    nd = len(plan.drop_pos)
    drop = plan.src[:nd]
    ys, lift = _broadcast_lead(ys, ops.mul_limb_consts(add_d, plan.p_mod, ring, drop))
    return jnp.concatenate([ops.add_mod(ys[..., :nd, :], lift, ring, drop), ys[..., nd:, :]], axis=-2)


def _check_add(add, tables: HybridTables, what: str):
    if add is not None and (add.ndim < 3 or add.shape[-3:-1] != (2, len(tables.rows))):
        raise ValueError(f"{what}: add has shape {tuple(add.shape)}, expected [..., 2, {len(tables.rows)}, N]")


def key_switch_divide(x, convs: Sequence, key: KeySwitchKey, ring: RNSContext, tables: HybridTables,
                      drop_rows, add=None) -> jax.Array:
    """round((key product of x + P add) / (P D)): a key switch (:func:`key_switch_convs`) whose
    result is added to ``add`` (uint32[..., 2, L, N], NTT, or None) and rescaled by D, the
    product of the basis rows ``drop_rows``, with one rounding and one conversion from D + P
    instead of ModDown's and the rescale's. Returns uint32[..., 2, L - |D|, N] over the other
    basis rows (NTT). The same two fused key-product launches as :func:`key_switch_convs`, over
    D + P (with the inverse NTT) and over the kept rows (with the NTT of the conversion, the
    subtraction and the scale (P D)^-1): the rescale's forward NTT of every kept limb is gone."""
    plan = _plan_for(ring, tables, drop_rows, "key_switch_divide")
    _check_add(add, tables, "key_switch_divide")
    ys = _key_product(x, convs, key, ring, tables, plan.src, intt=(ring, plan.src))  # [..., 2, |S|, N] coefficients
    if add is not None:  # + P add on D's rows (0 on P's), in the coefficient domain: the INTT is linear
        ys = _add_lifted(ys, ops.intt(take_limbs(add, plan.drop_pos), ring, plan.src[:len(plan.drop_pos)]),
                         plan, ring)
    conv = ops.exact_conv(ys, plan.conv)
    out = _key_product(x, convs, key, ring, tables, plan.keep, sub=conv, scale=plan.pd_inv,
                       sub_ntt=(ring, plan.keep))
    return _add_divided(out, add, plan, ring)


def _broadcast_lead(a, b):
    lead = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return jnp.broadcast_to(a, lead + a.shape[-2:]), jnp.broadcast_to(b, lead + b.shape[-2:])


def mod_down_divide(y, ring: RNSContext, tables: HybridTables, drop_rows) -> jax.Array:
    """round(y / (P D)) for y: uint32[..., L + alpha_p, N] over the extended basis (e.g. a
    double-hoisted sum of key products, NTT): :func:`mod_down` and the rescale that drops the
    basis rows ``drop_rows`` (product D) in one division (one INTT of D + P, one centered
    conversion, one NTT of the kept rows). Returns uint32[..., L - |D|, N] over the other basis
    rows (NTT)."""
    plan = _plan_for(ring, tables, drop_rows, "mod_down_divide")
    _check_basis(y, tables, "mod_down_divide", extended=True)
    nl = len(tables.rows)
    ys = take_limbs(y, list(plan.drop_pos) + list(range(nl, nl + len(tables.special_rows))))
    conv = ops.ntt(ops.exact_conv(ops.intt(ys, ring, plan.src), plan.conv), ring, plan.keep)
    diff = ops.sub_mod(take_limbs(y, plan.keep_pos), conv, ring, plan.keep)
    return ops.mul_limb_consts(diff, plan.pd_inv, ring, plan.keep)


def _make_tables(primes, rows, special_rows, alpha, *, plain_modulus=None, **options):
    if options:
        raise TypeError(f"hybrid key switching takes the option plain_modulus only, got {sorted(options)}")
    return make_hybrid_tables(primes, rows, special_rows, alpha, plain_modulus)


METHOD = keyswitch.register(keyswitch.Method(
    name="hybrid", tables_type=HybridTables, key_type=KeySwitchKey, make_tables=_make_tables,
    gen_key=gen_switching_key, decompose=mod_up_convs, product_extended=key_product_extended,
    mod_down=mod_down, switch=key_switch_convs, lift_extended=lift_extended,
    divide=keyswitch.Divide(can=can_divide, switch=key_switch_divide, mod_down=mod_down_divide)))
