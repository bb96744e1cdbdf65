"""The BGV evaluator: pure functions over :class:`Ciphertext` pytrees.

Every function takes the ciphertexts first, then the :class:`BGVContext`, then keys; ``jax.jit``
and ``jax.vmap`` apply directly (level and factor are static). Second operands may be a
Ciphertext, a :class:`jax_fhe.bfv.Plaintext` or a Python int (static under jit).

* Levels: binary operations bring the higher operand down to the other's level by modulus
  switching (:func:`mod_switch_to`), which only lowers its noise. :func:`mod_switch` drops one
  level: x' = (x - delta) / D with the t-correction (:mod:`jax_fhe.rlwe.plainmod`): the noise
  is divided by D (plus a rounding term t (1/2 + ...)), the message multiplied by D^-1 mod t
  (the ciphertext's ``factor``). Switch after each multiplication to keep the noise near
  its fresh size.
* Factors: a sum needs equal factors. Unequal ones are balanced by multiplying the operands by
  small integers a, b with a f_1 = b f_2 (mod t) (|a|, |b| <= sqrt(t): Euclid's algorithm
  stopped half way), which multiplies their noise by |a|, |b|.
* Multiplication: the tensor product in the NTT domain at the common level (no scaling; the
  factors multiply), then relinearization through :mod:`jax_fhe.rlwe.keyswitch` with keys of
  noise t e and the t-corrected ModDown, so the key-switching error is a multiple of t.
"""
from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp

from .. import ops
from ..bfv.keys import EvalKeys, check_eval_keys, normalize_step
from ..bfv.types import MulOperand, Plaintext, check_mul_operand, check_plaintext
from ..ops import take_limbs
from ..rlwe import galois, keyswitch, plainmod
from ..rns.shoup import device_u32
from .context import BGVContext, check_context
from .encryption import check_ct, lifted_message
from .types import Ciphertext


# -- factors and levels --------------------------------------------------------------------------

def balance_factors(f1: int, f2: int, t: int) -> tuple:
    """(a, b), small integers with a f1 = b f2 (mod t), max(|a|, |b|) <= sqrt(t): the extended
    Euclidean algorithm on (t, f2 / f1 mod t), stopped at the first remainder below sqrt(t)."""
    f1, f2 = int(f1) % t, int(f2) % t
    if f1 == f2:
        return 1, 1
    r = f2 * pow(f1, -1, t) % t          # want a = b r (mod t)
    r0, r1, b0, b1 = t, r, 0, 1          # invariant: r_i = b_i r (mod t)
    while r1 * r1 >= t:
        q = r0 // r1
        r0, r1, b0, b1 = r1, r0 - q * r1, b1, b0 - q * b1
    return r1, b1


def _mul_int_data(data, c: int, ctx: BGVContext, level: int):
    """Ciphertext data times the integer c (every component, mod each prime)."""
    w = device_u32([int(c) % q for q in ctx.params.primes(level)])[:, None]
    w = jnp.broadcast_to(w, data.shape[-2:])
    return ops.mul_mod(data, jnp.broadcast_to(w, data.shape), ctx.ring, ctx.params.rows(level))


def _switch_data(x, ctx: BGVContext, level: int) -> jax.Array:
    """(x - delta) / D from ``level`` to level - 1 on NTT data uint32[..., L, N]."""
    tab = ctx.mod_switch_tables(level)
    p = ctx.params
    drop, new = p.dropped(level), p.rows(level - 1)
    coeff = ops.intt(take_limbs(x, tab.drop_pos), ctx.ring, drop)
    conv = plainmod.correct(ops.exact_conv(coeff, tab.conv), coeff, tab.plain, ctx.ring)
    conv = ops.ntt(conv, ctx.ring, new)
    return ops.mul_limb_consts(ops.sub_mod(take_limbs(x, tab.keep_pos), conv, ctx.ring, new), tab.d_inv,
                               ctx.ring, new)


def mod_switch(ct: Ciphertext, ctx: BGVContext) -> Ciphertext:
    """One level down: divide by the dropped primes' product D with the t-correction; the
    factor becomes factor * D^-1 mod t. Any degree."""
    ctx = check_context(ctx, "mod_switch")
    check_ct(ct, ctx, "mod_switch", any_degree=True)
    if ct.level == 0:
        raise ValueError("mod_switch: the ciphertext is at level 0; no level left")
    t = ctx.params.plain_modulus
    d = ctx.mod_switch_tables(ct.level).d_mod_t
    return ct.replace(data=_switch_data(ct.data, ctx, ct.level), level=ct.level - 1,
                      factor=ct.factor * pow(d, -1, t) % t)


def mod_switch_to(ct: Ciphertext, level: int, ctx: BGVContext) -> Ciphertext:
    """Modulus-switch down to ``level`` (one level at a time)."""
    ctx = check_context(ctx, "mod_switch_to")
    check_ct(ct, ctx, "mod_switch_to", any_degree=True)
    ctx.params.check_level(level)
    if level > ct.level:
        raise ValueError(f"mod_switch_to: target level {level} is above the ciphertext's level {ct.level}")
    while ct.level > level:
        ct = mod_switch(ct, ctx)
    return ct


def _same_level(a: Ciphertext, b: Ciphertext, ctx) -> tuple:
    if a.level > b.level:
        a = mod_switch_to(a, b.level, ctx)
    elif b.level > a.level:
        b = mod_switch_to(b, a.level, ctx)
    return a, b


def _same_factor(a: Ciphertext, b: Ciphertext, ctx) -> tuple:
    if a.factor == b.factor:
        return a, b
    t = ctx.params.plain_modulus
    x, y = balance_factors(a.factor, b.factor, t)
    f = a.factor * x % t
    return (a.replace(data=_mul_int_data(a.data, x, ctx, a.level), factor=f),
            b.replace(data=_mul_int_data(b.data, y, ctx, b.level), factor=f))


# -- operands ------------------------------------------------------------------------------------

def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _operands(a, b, ctx, what, any_degree=False, operand=False):
    ctx = check_context(ctx, what)
    if not isinstance(a, Ciphertext) and isinstance(b, Ciphertext):
        a, b = b, a
    check_ct(a, ctx, what, any_degree=any_degree)
    if isinstance(b, jax.core.Tracer):
        raise TypeError(f"{what}: a traced value where a constant belongs; constants are encoded on the host, so "
                        "under jax.jit they must be static Python ints, or encode them as a Plaintext")
    if isinstance(b, Ciphertext):
        check_ct(b, ctx, what, any_degree=any_degree)
    elif isinstance(b, Plaintext):
        check_plaintext(b, ctx.params, what)
    elif isinstance(b, MulOperand) and operand:
        check_mul_operand(b, ctx.params, len(ctx.params.rows(a.level)), a.level, what)
    elif not _is_int(b):
        extra = ", a MulOperand" if operand else ""
        raise TypeError(f"{what}: the second operand must be a bgv.Ciphertext, a Plaintext{extra} or an int, "
                        f"got {type(b).__name__}")
    return a, b, ctx


def mul_operand(pt: Plaintext, ctx: BGVContext, level: int | None = None) -> MulOperand:
    """``pt`` prepared for :func:`mul` with ciphertexts at ``level`` (default: the top): lifted to
    that level's primes and NTT-transformed once, so that each product with it is one
    element-wise pass. Works under jit and vmap."""
    ctx = check_context(ctx, "mul_operand")
    check_plaintext(pt, ctx.params, "mul_operand")
    level = ctx.params.max_level if level is None else ctx.params.check_level(level)
    return MulOperand(data=lifted_message(pt.data, ctx, level, 1), params=ctx.params, level=level)


def _pad_size(x, size: int):
    k = x.shape[-3]
    if k == size:
        return x
    pad = [(0, 0)] * x.ndim
    pad[-3] = (0, size - k)
    return jnp.pad(x, pad)


def _centered(c: int, t: int) -> int:
    c = int(c) % t
    return c - t if c > t // 2 else c


def _plain_term(b, a: Ciphertext, ctx, factor: int) -> jax.Array:
    """[factor b]_t at a's level, NTT domain: uint32[..., L, N] (a Plaintext) or uint32[L, 1]
    (an int: the same value in every slot)."""
    if isinstance(b, Plaintext):
        return lifted_message(b.data, ctx, a.level, factor)
    t = ctx.params.plain_modulus
    c = _centered(int(b) * factor, t)
    return device_u32([c % q for q in ctx.params.primes(a.level)])[:, None]


def _add_to_c0(data, w, ctx, level, subtract=False):
    rows = ctx.params.rows(level)
    c0, w = jnp.broadcast_arrays(data[..., 0, :, :], w)
    op = ops.sub_mod if subtract else ops.add_mod
    rest = [jnp.broadcast_to(data[..., i, :, :], c0.shape) for i in range(1, data.shape[-3])]
    return jnp.stack([op(c0, w, ctx.ring, rows)] + rest, axis=-3)


# -- addition ------------------------------------------------------------------------------------

def add(a: Ciphertext, b, ctx: BGVContext) -> Ciphertext:
    """a + b (slot-wise mod t) for b a Ciphertext (levels and factors aligned), a Plaintext or
    an int."""
    a, b, ctx = _operands(a, b, ctx, "add", any_degree=True)
    if isinstance(b, Ciphertext):
        a, b = _same_factor(*_same_level(a, b, ctx), ctx)
        size = max(a.size, b.size)
        x, y = jnp.broadcast_arrays(_pad_size(a.data, size), _pad_size(b.data, size))
        return a.replace(data=ops.add_mod(x, y, ctx.ring, ctx.params.rows(a.level)))
    return a.replace(data=_add_to_c0(a.data, _plain_term(b, a, ctx, a.factor), ctx, a.level))


def neg(a: Ciphertext, ctx: BGVContext) -> Ciphertext:
    """-a (slot-wise mod t)."""
    ctx = check_context(ctx, "neg")
    check_ct(a, ctx, "neg", any_degree=True)
    return a.replace(data=ops.neg_mod(a.data, ctx.ring, ctx.params.rows(a.level)))


def sub(a, b, ctx: BGVContext) -> Ciphertext:
    """a - b: either may be the ciphertext; the other a Ciphertext, Plaintext or int."""
    if isinstance(a, Ciphertext):
        a, b, ctx = _operands(a, b, ctx, "sub", any_degree=True)
        if isinstance(b, Ciphertext):
            return add(a, neg(b, ctx), ctx)
        return a.replace(data=_add_to_c0(a.data, _plain_term(b, a, ctx, a.factor), ctx, a.level, subtract=True))
    return add(neg(b, ctx), a, ctx)


# -- multiplication ------------------------------------------------------------------------------

def relinearize_data(d, ctx: BGVContext, relin_key, level: int) -> jax.Array:
    """(d0, d1, d2) under (1, s, s^2) -> uint32[..., 2, L, N] under (1, s); the key switch adds
    t times a small error (t-noise keys, t-corrected ModDown)."""
    rows = ctx.params.rows(level)
    u = keyswitch.key_switch(d[..., 2, :, :], relin_key, ctx.ring, ctx.keyswitch_tables(level))
    return jnp.stack([ops.add_mod(d[..., 0, :, :], u[..., 0, :, :], ctx.ring, rows),
                      ops.add_mod(d[..., 1, :, :], u[..., 1, :, :], ctx.ring, rows)], axis=-3)


def _check_relin_key(evk, ctx, what):
    check_eval_keys(evk, ctx, what)
    if evk.relin is None:
        raise ValueError(f"{what}: ciphertext x ciphertext needs EvalKeys with a relinearization key "
                         "(keygen(..., relin=True)), or relinearize=False")


def relinearize(ct: Ciphertext, ctx: BGVContext, evk: EvalKeys) -> Ciphertext:
    """A degree-2 ciphertext back to degree 1 with ``evk.relin`` (degree 1: returned as is)."""
    ctx = check_context(ctx, "relinearize")
    check_ct(ct, ctx, "relinearize", any_degree=True)
    if ct.size == 2:
        return ct
    _check_relin_key(evk, ctx, "relinearize")
    return ct.replace(data=relinearize_data(ct.data, ctx, evk.relin, ct.level))


def _mul_ct(a, b, ctx, evk, relinearize, what):
    if a.size != 2 or (b is not None and b.size != 2):
        raise ValueError(f"{what}: ciphertext x ciphertext needs degree-1 operands; relinearize first")
    if relinearize:
        _check_relin_key(evk, ctx, what)
    t = ctx.params.plain_modulus
    if b is not None:
        a, b = _same_level(a, b, ctx)
        x, y = jnp.broadcast_arrays(a.data, b.data)
        factor = a.factor * b.factor % t
    else:
        x = y = a.data
        factor = a.factor * a.factor % t
    d = ops.tensor_product(x, y, ctx.ring, ctx.params.rows(a.level))
    data = relinearize_data(d, ctx, evk.relin, a.level) if relinearize else d
    return a.replace(data=data, factor=factor)


def mul(a: Ciphertext, b, ctx: BGVContext, evk: EvalKeys | None = None, *, relinearize: bool = True) -> Ciphertext:
    """a * b (slot-wise mod t) for b a Ciphertext (at the lower of the two levels, relinearized
    with ``evk.relin`` unless ``relinearize=False``), a Plaintext, a :class:`MulOperand` at a's
    level (:func:`mul_operand`) or an int. No modulus switch:
    call :func:`mod_switch` after it (the usual BGV schedule)."""
    a, b, ctx = _operands(a, b, ctx, "mul", any_degree=True, operand=True)
    if isinstance(b, Ciphertext):
        return _mul_ct(a, b, ctx, evk, relinearize, "mul")
    w = b.data if isinstance(b, MulOperand) else _plain_term(b, a, ctx, 1)
    rows = ctx.params.rows(a.level)
    w = jnp.expand_dims(w, -3)
    shape = jnp.broadcast_shapes(a.data.shape, w.shape)
    return a.replace(data=ops.mul_mod(jnp.broadcast_to(a.data, shape), jnp.broadcast_to(w, shape), ctx.ring, rows))


def square(a: Ciphertext, ctx: BGVContext, evk: EvalKeys | None = None, *, relinearize: bool = True) -> Ciphertext:
    """a * a (d1 = 2 a0 a1)."""
    ctx = check_context(ctx, "square")
    check_ct(a, ctx, "square", any_degree=True)
    return _mul_ct(a, None, ctx, evk, relinearize, "square")


# -- rotations -----------------------------------------------------------------------------------

def _apply(ct: Ciphertext, ctx: BGVContext, key, g: int) -> Ciphertext:
    return ct.replace(data=galois.apply_galois(ct.data, g, key, ctx.ring, ctx.keyswitch_tables(ct.level)))


def rotate_rows(ct: Ciphertext, step: int, ctx: BGVContext, evk: EvalKeys) -> Ciphertext:
    """Rotate both rows of the 2 x N/2 slot matrix left by ``step`` (static; negative: right)."""
    ctx = check_context(ctx, "rotate_rows")
    check_ct(ct, ctx, "rotate_rows")
    check_eval_keys(evk, ctx, "rotate_rows")
    step = normalize_step(step, ctx.params)
    if step == 0:
        return ct
    key = evk.rotations.get(step)
    if key is None:
        raise ValueError(f"rotate_rows: no rotation key for step {step}; keys exist for steps "
                         f"{sorted(evk.rotations)} (keygen(..., rotations=[...]))")
    return _apply(ct, ctx, key, ops.galois_element(step, ctx.params.n))


def rotate_columns(ct: Ciphertext, ctx: BGVContext, evk: EvalKeys) -> Ciphertext:
    """Swap the two rows of the slot matrix (X -> X^(2N-1)); needs ``evk.columns``."""
    ctx = check_context(ctx, "rotate_columns")
    check_ct(ct, ctx, "rotate_columns")
    check_eval_keys(evk, ctx, "rotate_columns")
    if evk.columns is None:
        raise ValueError("rotate_columns: no column-swap key (keygen(..., columns=True))")
    return _apply(ct, ctx, evk.columns, ops.conjugation_element(ctx.params.n))

