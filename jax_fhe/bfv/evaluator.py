"""The BFV evaluator: pure functions over :class:`Ciphertext` pytrees.

Every function takes the ciphertexts first, then the :class:`BFVContext`, then keys; all are
arguments, so ``jax.jit`` and ``jax.vmap`` (over the leading axes of ``data``) apply directly.
Second operands may be a Ciphertext, a :class:`Plaintext` or a Python int (a constant in every
slot; static under jit); :func:`mul` also takes a :class:`MulOperand` (:func:`mul_operand`). Rotation steps are static ints.

Multiplication (scale-and-round in RNS, after Halevi–Polyakov–Shoup, with exact conversions):

1. lift both ciphertexts from Q to the auxiliary basis B: the centered representatives
   (|c| <= Q/2), converted exactly (:func:`jax_fhe.ops.mixed_radix_conv`), NTT on B;
2. tensor product over Q B in the NTT domain: d0 = a0 b0, d1 = a0 b1 + a1 b0, d2 = a1 b1
   (integer coefficients below N Q^2 / 2, so exact since prod(B) > 8 t N Q);
3. scale and round: z = round(t d / Q) = (t d - [t d]_Q) / Q, computed on B as
   (t d - conv_{Q->B}([t d]_Q)) Q^-1 (an exact division: a ModDown by Q), then converted
   exactly from B to Q (|z| <= t N Q / 2 < B / 4, where the conversion cannot slip);
4. relinearize d2 with the s^2 -> s key (:mod:`jax_fhe.rlwe.keyswitch`, the parameter set's
   method).

Every step is one of the package's kernels (NTT, centered base conversion) or element-wise jnp;
no big integers, no host code, uint32 throughout. A conversion may slip by +-Q where a lifted
coefficient sits within 2^-20 of +-Q/2 (a different representative of the same residue: noise
t e, no error), and the rounding by +-1 (noise 1): both inside the bound of :mod:`.noise`.
"""
from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp

from .. import ops
from ..rlwe import galois, keyswitch
from ..rns.shoup import device_u32
from .context import BFVContext, check_context
from .encryption import check_ct, lifted_message, scaled_message
from .keys import EvalKeys, check_eval_keys, normalize_step
from .types import Ciphertext, MulOperand, Plaintext, check_mul_operand, check_plaintext


# -- operands ------------------------------------------------------------------------------------

def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _check_static_int(x, what: str) -> None:
    if isinstance(x, jax.core.Tracer):
        raise TypeError(f"{what}: a traced value where a constant belongs; constants are encoded on the host, "
                        "so under jax.jit they must be static Python ints (static_argnums or a closure), or "
                        "encode them as a Plaintext")


def _pad_size(x, size: int):
    k = x.shape[-3]
    if k == size:
        return x
    pad = [(0, 0)] * x.ndim
    pad[-3] = (0, size - k)
    return jnp.pad(x, pad)


def _add_to_c0(data, w, ctx: BFVContext, *, subtract: bool = False):
    """Add (or subtract) w: uint32[..., L, N] to component 0 of ciphertext data."""
    rows = ctx.q_rows
    c0, w = jnp.broadcast_arrays(data[..., 0, :, :], w)
    op = ops.sub_mod if subtract else ops.add_mod
    rest = [jnp.broadcast_to(data[..., i, :, :], c0.shape) for i in range(1, data.shape[-3])]
    return jnp.stack([op(c0, w, ctx.ring, rows)] + rest, axis=-3)


def _mul_poly(data, w, ctx: BFVContext):
    """Ciphertext data uint32[..., k, L, N] times w: uint32[..., L, N] (every component)."""
    w = jnp.expand_dims(w, -3)
    shape = jnp.broadcast_shapes(data.shape, w.shape)
    return ops.mul_mod(jnp.broadcast_to(data, shape), jnp.broadcast_to(w, shape), ctx.ring, ctx.q_rows)


def _const(c: int, ctx: BFVContext, *, scaled: bool) -> jax.Array:
    """The constant polynomial c (every slot c): round(Q [c]_t / t) (``scaled``) or the centered
    [c]_t, per q prime: uint32[L, 1] (broadcasts against [..., L, N] in the NTT domain)."""
    t = ctx.params.plain_modulus
    c = int(c) % t
    if scaled:
        big_q = ctx.params.modulus(0)
        val = (2 * big_q * c + t) // (2 * t)      # round(Q c / t)
    else:
        val = c - t if c > t // 2 else c
    return device_u32([val % q for q in ctx.params.q_primes])[:, None]


def _operands(a, b, ctx, what, any_degree=False, operand=False):
    ctx = check_context(ctx, what)
    if not isinstance(a, Ciphertext) and isinstance(b, Ciphertext):
        a, b = b, a
    check_ct(a, ctx, what, any_degree=any_degree)
    _check_static_int(b, what)
    if isinstance(b, Ciphertext):
        check_ct(b, ctx, what, any_degree=any_degree)
    elif isinstance(b, Plaintext):
        check_plaintext(b, ctx.params, what)
    elif isinstance(b, MulOperand) and operand:
        check_mul_operand(b, ctx.params, ctx.params.num_q, None, what)
    elif not _is_int(b):
        extra = ", a MulOperand" if operand else ""
        raise TypeError(f"{what}: the second operand must be a bfv.Ciphertext, a Plaintext{extra} or an int, "
                        f"got {type(b).__name__}")
    return a, b, ctx


def mul_operand(pt: Plaintext, ctx: BFVContext) -> MulOperand:
    """``pt`` prepared for :func:`mul`: lifted to the q primes and NTT-transformed once, so that
    each product with it is one element-wise pass. Works under jit and vmap."""
    ctx = check_context(ctx, "mul_operand")
    check_plaintext(pt, ctx.params, "mul_operand")
    return MulOperand(data=lifted_message(pt.data, ctx), params=ctx.params)


# -- addition ------------------------------------------------------------------------------------

def add(a: Ciphertext, b, ctx: BFVContext) -> Ciphertext:
    """a + b (slot-wise mod t) for b a Ciphertext, a Plaintext or an int."""
    a, b, ctx = _operands(a, b, ctx, "add", any_degree=True)
    if isinstance(b, Ciphertext):
        size = max(a.size, b.size)
        x, y = jnp.broadcast_arrays(_pad_size(a.data, size), _pad_size(b.data, size))
        return a.replace(data=ops.add_mod(x, y, ctx.ring, ctx.q_rows))
    w = scaled_message(b.data, ctx) if isinstance(b, Plaintext) else _const(b, ctx, scaled=True)
    return a.replace(data=_add_to_c0(a.data, w, ctx))


def neg(a: Ciphertext, ctx: BFVContext) -> Ciphertext:
    """-a (slot-wise mod t)."""
    ctx = check_context(ctx, "neg")
    check_ct(a, ctx, "neg", any_degree=True)
    return a.replace(data=ops.neg_mod(a.data, ctx.ring, ctx.q_rows))


def sub(a, b, ctx: BFVContext) -> Ciphertext:
    """a - b: either may be the ciphertext; the other a Ciphertext, Plaintext or int."""
    if isinstance(a, Ciphertext):
        a, b, ctx = _operands(a, b, ctx, "sub", any_degree=True)
        if isinstance(b, Ciphertext):
            return add(a, neg(b, ctx), ctx)
        w = scaled_message(b.data, ctx) if isinstance(b, Plaintext) else _const(b, ctx, scaled=True)
        return a.replace(data=_add_to_c0(a.data, w, ctx, subtract=True))
    return add(neg(b, ctx), a, ctx)  # a plaintext or int minus a ciphertext (checks in add/neg)


# -- multiplication ------------------------------------------------------------------------------

def _lift(data, ctx: BFVContext) -> jax.Array:
    """Ciphertext data uint32[..., k, L, N] (NTT on Q) -> uint32[..., k, L + Lb, N] (NTT on Q B):
    the centered representatives, exactly."""
    p = ctx.params
    nq, nb = p.num_q, len(p.aux_primes)
    coeff = ops.intt(data, ctx.ring, ctx.q_rows)
    up = ops.ntt(ops.mixed_radix_conv(coeff, ctx.mul.lift), ctx.mul_ring, tuple(range(nq, nq + nb)))
    return jnp.concatenate([data, up], axis=-2)


def _scale_round(d, ctx: BFVContext) -> jax.Array:
    """round(t d / Q) on Q, NTT domain: uint32[..., k, L + Lb, N] (NTT on Q B) -> [..., k, L, N]."""
    p = ctx.params
    nq, nb = p.num_q, len(p.aux_primes)
    qb_rows, b_rows = tuple(range(nq + nb)), tuple(range(nq, nq + nb))
    w = ops.mul_limb_consts(ops.intt(d, ctx.mul_ring, qb_rows), ctx.mul.t_mod, ctx.mul_ring, qb_rows)
    conv = ops.mixed_radix_conv(w[..., :nq, :], ctx.mul.lift)               # [t d]_Q on B
    z = ops.mul_limb_consts(ops.sub_mod(w[..., nq:, :], conv, ctx.mul_ring, b_rows), ctx.mul.q_inv,
                            ctx.mul_ring, b_rows)                            # round(t d / Q) on B
    return ops.ntt(ops.mixed_radix_conv(z, ctx.mul.back), ctx.ring, ctx.q_rows)


def _tensor(x, y, ctx: BFVContext) -> jax.Array:
    """(x0 y0, x0 y1 + x1 y0, x1 y1) over Q B (NTT): [..., 2, L+Lb, N] x2 -> [..., 3, L+Lb, N]."""
    return ops.tensor_product(x, y, ctx.mul_ring, tuple(range(x.shape[-2])))


def relinearize_data(d, ctx: BFVContext, relin_key) -> jax.Array:
    """(d0, d1, d2) under (1, s, s^2) -> uint32[..., 2, L, N] under (1, s)."""
    rows = ctx.q_rows
    u = keyswitch.key_switch(d[..., 2, :, :], relin_key, ctx.ring, ctx.keyswitch_tables(0))
    return jnp.stack([ops.add_mod(d[..., 0, :, :], u[..., 0, :, :], ctx.ring, rows),
                      ops.add_mod(d[..., 1, :, :], u[..., 1, :, :], ctx.ring, rows)], axis=-3)


def _check_relin_key(evk, ctx, what):
    check_eval_keys(evk, ctx, what)
    if evk.relin is None:
        raise ValueError(f"{what}: ciphertext x ciphertext needs EvalKeys with a relinearization key "
                         "(keygen(..., relin=True)), or relinearize=False")


def relinearize(ct: Ciphertext, ctx: BFVContext, evk: EvalKeys) -> Ciphertext:
    """A degree-2 ciphertext (from ``mul(..., relinearize=False)``) back to degree 1 with
    ``evk.relin``; a degree-1 ciphertext is returned as is."""
    ctx = check_context(ctx, "relinearize")
    check_ct(ct, ctx, "relinearize", any_degree=True)
    if ct.size == 2:
        return ct
    _check_relin_key(evk, ctx, "relinearize")
    return ct.replace(data=relinearize_data(ct.data, ctx, evk.relin))


def _mul_ct(a: Ciphertext, b: Ciphertext | None, ctx, evk, relinearize: bool, what: str) -> Ciphertext:
    if a.size != 2 or (b is not None and b.size != 2):
        raise ValueError(f"{what}: ciphertext x ciphertext needs degree-1 operands; relinearize first")
    if relinearize:
        _check_relin_key(evk, ctx, what)
    if b is None:
        x = _lift(a.data, ctx)
        d = _tensor(x, x, ctx)
    else:
        x, y = jnp.broadcast_arrays(a.data, b.data)
        d = _tensor(_lift(x, ctx), _lift(y, ctx), ctx)
    d = _scale_round(d, ctx)
    return a.replace(data=relinearize_data(d, ctx, evk.relin) if relinearize else d)


def mul(a: Ciphertext, b, ctx: BFVContext, evk: EvalKeys | None = None, *,
        relinearize: bool = True) -> Ciphertext:
    """a * b (slot-wise mod t) for b a Ciphertext (scale-and-round, then relinearized with
    ``evk.relin`` unless ``relinearize=False``, which returns a degree-2 ciphertext), a
    Plaintext, a :class:`MulOperand` (the plaintext already lifted and transformed) or an int
    (no key needed)."""
    a, b, ctx = _operands(a, b, ctx, "mul", any_degree=True, operand=True)
    if isinstance(b, Ciphertext):
        return _mul_ct(a, b, ctx, evk, relinearize, "mul")
    if isinstance(b, MulOperand):
        w = b.data
    else:
        w = lifted_message(b.data, ctx) if isinstance(b, Plaintext) else _const(b, ctx, scaled=False)
    return a.replace(data=_mul_poly(a.data, w, ctx))


def square(a: Ciphertext, ctx: BFVContext, evk: EvalKeys | None = None, *, relinearize: bool = True) -> Ciphertext:
    """a * a with one lift (d1 = 2 a0 a1)."""
    ctx = check_context(ctx, "square")
    check_ct(a, ctx, "square", any_degree=True)
    return _mul_ct(a, None, ctx, evk, relinearize, "square")


# -- rotations -----------------------------------------------------------------------------------

def _apply(ct: Ciphertext, ctx: BFVContext, key, g: int) -> Ciphertext:
    return ct.replace(data=galois.apply_galois(ct.data, g, key, ctx.ring, ctx.keyswitch_tables(0)))


def rotate_rows(ct: Ciphertext, step: int, ctx: BFVContext, evk: EvalKeys) -> Ciphertext:
    """Rotate both rows of the 2 x N/2 slot matrix left by ``step`` (negative: right): slot j
    takes slot j + step. Needs the key for step mod N/2; ``step`` is static."""
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


def rotate_columns(ct: Ciphertext, ctx: BFVContext, evk: EvalKeys) -> Ciphertext:
    """Swap the two rows of the slot matrix (X -> X^(2N-1)); needs ``evk.columns``."""
    ctx = check_context(ctx, "rotate_columns")
    check_ct(ct, ctx, "rotate_columns")
    check_eval_keys(evk, ctx, "rotate_columns")
    if evk.columns is None:
        raise ValueError("rotate_columns: no column-swap key (keygen(..., columns=True))")
    return _apply(ct, ctx, evk.columns, ops.conjugation_element(ctx.params.n))

