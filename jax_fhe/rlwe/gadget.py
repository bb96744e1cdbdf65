"""Gadget decomposition over a whole RNS modulus, RLWE encryption rows and gadget key switching.

The gadget. For Q = q_0 ... q_{L-1} (each q_l < 2^31) and base B = 2^base_log, the gadget vector
is g = (1, B, B^2, ..., B^(len-1)) in Z_Q, with base_log * len >= log2(Q) + 2 (VIPIR: Q ~ 2^87,
B = 2^18, len = 5). It is an *integer* gadget over Z_Q, not one gadget per RNS limb, so
decomposing x (given by its residues x_l) needs the integer x itself:

  1. y_l = x_l * (Q/q_l)^-1 mod q_l                         (one mul_mod per limb)
  2. v   = round(sum_l y_l / q_l)                           (integer fixed point, see below)
  3. X   = sum_l y_l * (Q/q_l) - v * Q                      (exact, mod 2^(16 W))
  4. balanced base-B digits of X, each in [-B/2, B/2)

Step 3 is the CRT with the correct multiple of Q subtracted, so X is the centered
representative of x in [-Q/2, Q/2] (when sum y_l / q_l sits within 2^-25 of a half-integer,
either neighbour is taken; both have |X| <= Q/2 + 2^-25 Q, and both are valid). All of it runs
on uint32 words: products of 16-bit chunks (< 2^32) are summed column-wise and carried, so no
64-bit integers (and no ``jax_enable_x64``) are needed, and every step is an element-wise op
that XLA fuses. Step 2 uses v = (sum_l mulhi(y_l, floor(2^60 / q_l)) + 2^27) >> 28, exact
integer arithmetic (no floats: identical bits on every backend).

Digits are returned as residues mod each q_l (negative d as q_l + d), ready for the NTT.

Gadget key switching. A key from s' to s is ``len`` RLWE rows (b_j, a_j) with
b_j = -a_j s + e_j + B^j s' (phase b + a s). For a ciphertext (b, a) under s', decomposing a into
digits d_j gives (b + sum d_j b_j, sum d_j a_j), a ciphertext of the same phase under s plus the
noise sum_j d_j e_j. Ring automorphisms X -> X^g use a key from s(X^g) to s.

Layout: ciphertexts are uint32[..., 2, L, N] in the NTT domain in the order of every RLWE
ciphertext here (:mod:`jax_fhe.rlwe.ciphertext`): index 0 = b = c0, 1 = a = c1, phase b + a s.
Keys are uint32[len, 2, L, N], NTT domain. Gadget key switching is registered with
:mod:`jax_fhe.rlwe.keyswitch` as the method "gadget" (no special primes: its extended basis is
the basis and its ModDown the identity).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..ops import (add_mod, automorphism_ntt, intt, mul_limb_consts, mul_mod, ntt_lift, reduce_mod,
                   rounded_quotient)
from ..rns import HostRandom, RNSContext, record_uniform_seed
from ..rns.crt import CrtQuotient, make_crt_quotient
from ..rns.pytree import pytree_dataclass, static_field
from ..rns.shoup import device_u32
from . import keyswitch
from .encryption import NOISE_TAIL, encrypt_sk, phase, seed_record

_U32 = jnp.uint32
_CHUNK = 16
_MASK16 = 0xFFFF


@pytree_dataclass
class Gadget:
    """Tables of the integer gadget (1, B, ..., B^(len-1)) over Z_Q, Q = prod(primes).

    Leaves:
      qhat_inv:  uint32[L]        (Q/q_l)^-1 mod q_l
      qhat:      uint32[L, W]     16-bit chunks of Q/q_l (W chunks, little-endian)
      neg_q:     uint32[W]        16-bit chunks of 2^(16 W) - Q
      quotient:  the fixed-point CRT quotient of the primes (:mod:`jax_fhe.rns.crt`)
      powers:    uint32[len, L]   B^j mod q_l (the gadget vector in RNS)
    Static: ``primes``, ``base_log``, ``length``.
    """

    qhat_inv: jax.Array
    qhat: jax.Array
    neg_q: jax.Array
    quotient: CrtQuotient
    powers: jax.Array
    primes: tuple = static_field()
    base_log: int = static_field()
    length: int = static_field()

    @property
    def base(self) -> int:
        """The gadget base B = 2^base_log."""
        return 1 << self.base_log

    @property
    def rows(self) -> tuple:
        """The context rows the gadget decomposes (its primes are the context's first L)."""
        return tuple(range(len(self.primes)))

    @property
    def special_rows(self) -> tuple:
        """No special primes (the key-switching interface's tables attribute)."""
        return ()

    @property
    def ext_rows(self) -> tuple:
        """The extended basis: the rows themselves (no special primes)."""
        return self.rows

    @property
    def modulus(self) -> int:
        """Q, the product of the gadget's primes."""
        return math.prod(self.primes)

    def __repr__(self) -> str:
        return (f"Gadget(base 2^{self.base_log}, length {self.length}, "
                f"Q ~ 2^{math.log2(self.modulus):.1f} over {len(self.primes)} primes)")


def make_gadget(primes: Sequence[int], base_log: int, length: int) -> Gadget:
    """Tables for the gadget (1, 2^base_log, ..., 2^(base_log (length-1))) over Z_Q.

    Needs base_log * length >= log2(Q) + 2 so balanced digits represent all of [-Q/2, Q/2].
    """
    primes = tuple(int(q) for q in primes)
    if not primes or any(not 2 < q < (1 << 31) for q in primes) or len(set(primes)) != len(primes):
        raise ValueError(f"make_gadget: primes must be distinct odd moduli below 2^31, got {primes}")
    if len(primes) > 16:
        raise ValueError(f"make_gadget: at most 16 limbs are supported, got {len(primes)}")
    base_log, length = int(base_log), int(length)
    if not 1 <= base_log <= 30 or length < 1:
        raise ValueError(f"make_gadget: need 1 <= base_log <= 30 and length >= 1, got {base_log}, {length}")
    if 1 << (base_log - 1) >= min(primes):
        raise ValueError(f"make_gadget: digits up to 2^{base_log - 1} must be below the smallest prime "
                         f"{min(primes)} (use a smaller base)")
    big_q = math.prod(primes)
    if base_log * length < big_q.bit_length() + 1:
        raise ValueError(f"make_gadget: base 2^{base_log} x length {length} covers {base_log * length} "
                         f"bits but Q has {big_q.bit_length()}; need base_log * length >= "
                         f"{big_q.bit_length() + 1}")
    width = -(-(max(big_q.bit_length() + 2, base_log * length + 1)) // _CHUNK)
    chunks = lambda v: [(v >> (_CHUNK * c)) & _MASK16 for c in range(width)]  # noqa: E731
    qhat = [big_q // q for q in primes]
    return Gadget(
        qhat_inv=device_u32([pow(h % q, -1, q) for h, q in zip(qhat, primes)]),
        qhat=device_u32([chunks(h) for h in qhat]),
        neg_q=device_u32(chunks((1 << (_CHUNK * width)) - big_q)),
        quotient=make_crt_quotient(primes),
        powers=device_u32([[pow(2, base_log * j, q) for q in primes] for j in range(length)]),
        primes=primes, base_log=base_log, length=length,
    )


def decompose(x: jax.Array, gadget: Gadget, ctx: RNSContext) -> jax.Array:
    """Balanced gadget digits of coefficient-domain residues.

    ``x``: uint32[..., L, N] (canonical residues of the primes ``gadget.primes``, coefficient
    domain). Returns uint32[..., len, L, N]: digit j of every coefficient, as residues, with
    sum_j digit_j * B^j == x (mod Q) and every digit in [-B/2, B/2).
    """
    d = decompose_signed(x, gadget, ctx)[..., None, :]                 # int32[..., len, 1, N]
    q = jnp.asarray(np.asarray(gadget.primes, dtype=np.int64).astype(np.int32))[:, None]
    return lax.bitcast_convert_type(jnp.where(d < 0, d + q, d), _U32)


def decompose_ntt(x: jax.Array, gadget: Gadget, ctx: RNSContext) -> jax.Array:
    """``ntt(decompose(x))`` for coefficient-domain x uint32[..., L, N] -> uint32[..., len, L, N]
    (NTT domain), through :func:`jax_fhe.ops.ntt_lift`: the digits go to the transform as one
    int32 array and are lifted to the L primes as the kernel loads them, so their L residue
    copies are never written and re-read (at the PIR expansion's batch 32, 16 GB of the 166 GB
    the stage moved by its compiled graph)."""
    digits = decompose_signed(x, gadget, ctx)                          # int32[..., len, N]
    return ntt_lift(digits, ctx, rows=range(len(gadget.primes)))


def decompose_signed(x: jax.Array, gadget: Gadget, ctx: RNSContext) -> jax.Array:
    """The balanced gadget digits of :func:`decompose` as signed integers: uint32[..., L, N] ->
    int32[..., len, N], every digit in [-B/2, B/2)."""
    x = _check_data(x, gadget, ctx, "decompose")
    nl = len(gadget.primes)
    y = mul_limb_consts(x, gadget.qhat_inv, ctx)                   # [..., L, N], < q_l
    # step 2: v = round(sum_l y_l / q_l) in 32-bit fixed point (jax_fhe.rns.crt)
    v = rounded_quotient(y, gadget.quotient)                        # [..., N], in [0, L]
    # step 3: column sums of 16 x 16-bit partial products, then carries (all < 2^32)
    width = gadget.neg_q.shape[0]
    cols = [jnp.zeros(v.shape, _U32) for _ in range(width + 2)]

    def add_product(a16, b16, col):
        p = a16 * b16
        cols[col] = cols[col] + (p & _U32(_MASK16))
        cols[col + 1] = cols[col + 1] + (p >> 16)

    for l in range(nl):
        ylo, yhi = y[..., l, :] & _U32(_MASK16), y[..., l, :] >> 16
        for c in range(width):
            h = gadget.qhat[l, c]
            add_product(ylo, h, c)
            add_product(yhi, h, c + 1)
    for c in range(width):
        add_product(v, gadget.neg_q[c], c)
    words, carry = [], jnp.zeros(v.shape, _U32)
    for c in range(width):
        t = cols[c] + carry
        words.append(t & _U32(_MASK16))
        carry = t >> 16
    # step 4: balanced digits of the two's-complement integer held in `words`, stacked as
    # int32[..., len, N] (callers broadcast them to residues, or hand them to ntt_lift: writing
    # the residues straight from `words` makes XLA (CPU compile) materialise each (digit, limb)
    # slice and concatenate them)
    b, half = gadget.base_log, 1 << (gadget.base_log - 1)
    digits, carry = [], jnp.zeros(v.shape, jnp.int32)
    for j in range(gadget.length):
        raw = _bits(words, b * j, b).astype(jnp.int32) + carry
        high = raw >= half
        digits.append(jnp.where(high, raw - (1 << b), raw))
        carry = high.astype(jnp.int32)
    return jnp.stack(digits, axis=-2)                                # int32[..., len, N]


def _bits(words, start, count):
    """Bits [start, start + count) of the little-endian 16-bit words, as uint32."""
    out = None
    c0 = start // _CHUNK
    for c in range(c0, min(len(words), -(-(start + count) // _CHUNK))):
        shift = c * _CHUNK - start
        part = words[c] << shift if shift >= 0 else words[c] >> -shift
        out = part if out is None else out | part
    return out & _U32((1 << count) - 1)


def recompose(digits: jax.Array, gadget: Gadget, ctx: RNSContext) -> jax.Array:
    """sum_j digits_j * B^j mod Q: uint32[..., len, L, N] -> uint32[..., L, N] (any domain)."""
    acc = None
    for j in range(gadget.length):
        d = digits[..., j, :, :]
        t = mul_limb_consts(d, gadget.powers[j], ctx)
        acc = t if acc is None else add_mod(acc, t, ctx)
    return acc


# ---------------------------------------------------------------------------------------------
# RLWE rows: encryptions of given NTT-domain messages, phase b + a s = m + e


def encrypt_ntt(s_ntt: jax.Array, m_ntt: jax.Array, ctx: RNSContext, rng: HostRandom,
                sigma: float, tail: float, error_factor: int = 1, *, a_seed: bytes | None = None) -> jax.Array:
    """RLWE encryptions (b, a) of NTT-domain messages ``m_ntt``: uint32[..., L, N] over every row
    of ``ctx`` under ``s_ntt`` (uint32[L, N]): :func:`jax_fhe.rlwe.encrypt_sk` (noise times
    ``error_factor``; ``a_seed`` too)."""
    if not isinstance(rng, HostRandom):
        raise TypeError(f"encrypt_ntt: rng must be a HostRandom, got {type(rng).__name__}")
    return encrypt_sk(m_ntt, s_ntt, ctx, range(len(ctx.primes)), rng, sigma, tail, error_factor, a_seed=a_seed)


def phase_ntt(ct: jax.Array, s_ntt: jax.Array, ctx: RNSContext) -> jax.Array:
    """b + a s for NTT-domain ciphertexts uint32[..., 2, L, N] -> uint32[..., L, N] (NTT domain)."""
    return phase(ct, s_ntt, ctx, range(ct.shape[-2]))


# ---------------------------------------------------------------------------------------------
# Gadget key switching and automorphisms


@pytree_dataclass
class GadgetKey:
    """Key-switching key from s' to s: ``rows``: uint32[len, 2, L, N] (NTT domain), row j an RLWE
    encryption of B^j s' under s. Static: ``galois`` (the automorphism it serves, 0 for none)."""

    rows: jax.Array
    galois: int = static_field(default=0)

    def __repr__(self) -> str:
        return f"GadgetKey(len={self.rows.shape[0]}, galois={self.galois})"


def gadget_rows(s_ntt, m_ntt, gadget: Gadget, ctx: RNSContext, rng: HostRandom, sigma: float,
                tail: float, error_factor: int = 1, *, a_seed: bytes | None = None) -> jax.Array:
    """RLWE encryptions of m * B^j (j < len) under s: uint32[..., len, 2, L, N] (NTT domain)."""
    m_ntt = jnp.asarray(m_ntt)
    scaled = jnp.stack([mul_limb_consts(m_ntt, gadget.powers[j], ctx) for j in range(gadget.length)],
                       axis=-3)
    return encrypt_ntt(s_ntt, scaled, ctx, rng, sigma, tail, error_factor, a_seed=a_seed)


def switching_key(s_from_ntt, s_to_ntt, gadget: Gadget, ctx: RNSContext, rng: HostRandom,
                  sigma: float = 3.2, tail: float = 6.0, *, galois: int = 0, error_factor: int = 1,
                  a_seed: bytes | None = None) -> GadgetKey:
    """Key switching from ``s_from`` to ``s_to`` (both NTT-domain uint32[L, N]); the rows' noise
    is multiplied by ``error_factor`` (BGV: t). ``a_seed``: the rows' a parts come from that
    public seed, recorded on the key (:mod:`jax_fhe.io` then stores the seed)."""
    key = GadgetKey(rows=gadget_rows(s_to_ntt, s_from_ntt, gadget, ctx, rng, sigma, tail, error_factor,
                                     a_seed=a_seed),
                    galois=int(galois))
    if a_seed is not None:
        record_uniform_seed(key, seed_record(a_seed, ctx, range(len(ctx.primes)), (gadget.length,), field="rows"))
    return key


def automorphism_key(s_ntt, galois: int, gadget: Gadget, ctx: RNSContext, rng: HostRandom,
                     sigma: float = 3.2, tail: float = 6.0) -> GadgetKey:
    """Key for X -> X^galois: switches from s(X^galois) back to s."""
    return switching_key(automorphism_ntt(s_ntt, galois), s_ntt, gadget, ctx, rng, sigma, tail,
                         galois=galois)


def key_switch(ct: jax.Array, key: GadgetKey, gadget: Gadget, ctx: RNSContext) -> jax.Array:
    """Switch NTT-domain ciphertexts uint32[..., 2, L, N] from the key's s' to its s."""
    ct = _check_data(ct, gadget, ctx, "key_switch")
    if ct.ndim < 3 or ct.shape[-3] != 2:
        raise ValueError(f"key_switch: ciphertexts must be uint32[..., 2, L, N], got {ct.shape}")
    if key.rows.shape != (gadget.length, 2) + ct.shape[-2:]:
        raise ValueError(f"key_switch: key rows {key.rows.shape} do not match gadget length "
                         f"{gadget.length} and ciphertext limbs/N {ct.shape[-2:]}")
    acc = key_switch_a(ct[..., 1, :, :], key.rows, gadget, ctx)              # [..., 2, L, N]
    return add_b_part(acc, ct[..., 0, :, :], ctx)


def key_switch_a(a: jax.Array, rows: jax.Array, gadget: Gadget, ctx: RNSContext) -> jax.Array:
    """The key-switched a-part alone: sum_j d_j rows_j for the digits d_j of NTT-domain
    a: uint32[..., L, N] -> uint32[..., 2, L, N] (the caller adds the input's b to index 0, see
    :func:`add_b_part`). Takes the a-part as its own array so that callers which keep a and b
    apart (query expansion) hand the inverse NTT a whole buffer, not a slice to copy first."""
    digits = decompose_ntt(intt(a, ctx), gadget, ctx)                        # [..., len, L, N]
    return gadget_product(digits, rows, ctx)


def add_b_part(acc: jax.Array, b: jax.Array, ctx: RNSContext) -> jax.Array:
    """(acc_b + b, acc_a) for acc uint32[..., 2, L, N] and b uint32[..., L, N]: one element-wise
    pass (adding a zero a-part) that XLA fuses with its consumers, where ``.at[..., 0].set``
    copied the whole result."""
    return add_mod(acc, jnp.stack([b, jnp.zeros_like(b)], axis=-3), ctx)


def gadget_product(digits: jax.Array, rows: jax.Array, ctx: RNSContext) -> jax.Array:
    """sum_j digits_j * rows_j mod q: digits uint32[..., K, L, N], rows uint32[..., K, 2, L, N]
    (both NTT domain) -> uint32[..., 2, L, N]. Sums up to 7 reduced products before one
    reduction (7 q < 2^32 for q < 2^29; 3 for larger primes)."""
    k = digits.shape[-3]
    group = 7 if max(ctx.primes) < (1 << 29) else 3
    d = jnp.broadcast_to(digits[..., :, None, :, :], digits.shape[:-3] + (k, 2) + digits.shape[-2:])
    shape = jnp.broadcast_shapes(d.shape, rows.shape)
    prods = mul_mod(jnp.broadcast_to(d, shape), jnp.broadcast_to(rows, shape), ctx)  # [..., K, 2, L, N]
    acc = None
    for g0 in range(0, k, group):
        part = reduce_mod(jnp.sum(prods[..., g0:g0 + group, :, :, :], axis=-4, dtype=_U32), ctx)
        acc = part if acc is None else add_mod(acc, part, ctx)
    return acc


def automorphism(ct: jax.Array, key: GadgetKey, gadget: Gadget, ctx: RNSContext) -> jax.Array:
    """X -> X^g on NTT-domain ciphertexts, then key switching back to s (g = ``key.galois``)."""
    if not key.galois:
        raise ValueError("automorphism: the key was not made by automorphism_key (galois = 0)")
    return key_switch(automorphism_ntt(ct, key.galois), key, gadget, ctx)


def _check_data(x, gadget, ctx, what):
    if not isinstance(gadget, Gadget):
        raise TypeError(f"{what}: expected a Gadget (make_gadget), got {type(gadget).__name__}")
    if not isinstance(ctx, RNSContext):
        raise TypeError(f"{what}: expected an RNSContext, got {type(ctx).__name__}")
    if tuple(ctx.primes[: len(gadget.primes)]) != gadget.primes:
        raise ValueError(f"{what}: the gadget is for primes {gadget.primes} but the context starts "
                         f"with {ctx.primes[: len(gadget.primes)]}")
    x = jnp.asarray(x)
    if x.dtype != _U32 or x.ndim < 2 or x.shape[-2] != len(gadget.primes) or x.shape[-1] != ctx.n:
        raise ValueError(f"{what}: expected uint32[..., L={len(gadget.primes)}, N={ctx.n}], got "
                         f"{x.dtype}{list(x.shape)}")
    return x


# ---------------------------------------------------------------------------------------------
# The key-switching interface (jax_fhe.rlwe.keyswitch)


def _make_tables(primes, rows, special_rows, alpha, *, base_log: int, length: int):
    rows = tuple(int(r) for r in rows)
    if tuple(special_rows):
        raise ValueError("gadget key switching uses no special primes")
    if rows != tuple(range(len(rows))):
        raise ValueError(f"gadget key switching decomposes the context's first rows, got rows {rows}")
    return make_gadget([primes[r] for r in rows], base_log, length)


def _gen_key(ring, s_from, s_to, *, num_q, alpha, sigma, rng, tail=NOISE_TAIL, tables=None, error_factor=1,
             a_seed=None):
    if not isinstance(tables, Gadget):
        raise ValueError("gadget key generation needs the gadget (tables=make_gadget(...))")
    return switching_key(s_from, s_to, tables, ring, rng, sigma, tail, error_factor=error_factor, a_seed=a_seed)


def _decompose(x, ring, gadget):
    return decompose_ntt(intt(x, ring), gadget, ring)


def _product(x, digits, key, ring, gadget):
    return gadget_product(digits, key.rows, ring)


def _identity(x, ring, gadget):
    return x


METHOD = keyswitch.register(keyswitch.Method(
    name="gadget", tables_type=Gadget, key_type=GadgetKey, make_tables=_make_tables, gen_key=_gen_key,
    decompose=_decompose, product_extended=_product, mod_down=_identity, switch=_product,
    lift_extended=_identity))
