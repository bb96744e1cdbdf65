"""The CKKS evaluator: pure functions over :class:`Ciphertext` pytrees.

Every function takes the ciphertexts first, then the :class:`CKKSContext` (tables), then keys;
all are arguments, so ``jax.jit`` and ``jax.vmap`` (over the leading axes of ``data``) apply
directly. Levels and scales are static; the rules:

* ``add``/``sub`` need equal levels and scales. A ciphertext at a higher level is brought down
  to the other's level *and scale* (limb drop when the lower level's primes are a subset and
  the scales already agree, otherwise multiply by integer constants and rescale level by level,
  which lands within 2^-(log_scale-2) of the wanted scale; see :func:`level_down`). At one level, scales that differ by a factor
  >= 2^(log_scale-4) are matched by an integer multiplication; closer unequal scales are an
  error (scales "agree" within a relative 2^-(log_scale-4)).
* ``mul`` needs equal levels only (an operand at its level's default scale is brought down to
  the lower level's default scale); the result has the product of the scales and, by default,
  is relinearized and rescaled once. Products of ciphertexts at a level's default scale rescale
  exactly onto the next level's default scale; constants are encoded so that the same holds.
* Plaintext operands must be at the ciphertext's level (or at a level whose primes include it).
* Constants (Python numbers) are encoded on the host at trace time, so under ``jax.jit`` they
  must be static (``jax.jit(ckks.mul, static_argnums=1)`` or ``functools.partial``); so must
  rotation steps. Traced values raise a TypeError that says so.
* ``mul(..., relinearize=False)`` returns a degree-2 ciphertext (three polynomials, phase
  c0 + c1 s + c2 s^2); add/sub/rescale/decrypt accept it, :func:`relinearize` brings it back.
  Key switching goes through :mod:`jax_fhe.rlwe.keyswitch` (the method the parameter set names).
"""
from __future__ import annotations

import math
import numbers

import jax
import jax.numpy as jnp
import numpy as np

from .. import ops
from ..ops import take_limbs, take_static
from ..rlwe import keyswitch
from ..rns.shoup import device_u32
from .context import CKKSContext, check_context
from .encoder import check_fits
from .keys import EvalKeys
from .types import Ciphertext, Plaintext, check_data


# -- checks and small helpers -----------------------------------------------------------------

def check_ct(ct, ctx: CKKSContext, what: str, *, any_degree: bool = False) -> None:
    """Raise unless ``ct`` is a Ciphertext of the context's parameter set with data of its level
    (two polynomials, or any number with ``any_degree``)."""
    if not isinstance(ct, Ciphertext):
        raise TypeError(f"{what}: expected a Ciphertext, got {type(ct).__name__}")
    if ct.params != ctx.params:
        raise ValueError(f"{what}: ciphertext is for {ct.params.name!r}, context for {ctx.params.name!r}")
    if not ct.is_ntt:
        raise ValueError(f"{what}: the ciphertext is in the coefficient domain; CKKS evaluates in the NTT domain")
    if not any_degree and getattr(ct.data, "ndim", 0) >= 3 and ct.data.shape[-3] == 3:
        raise ValueError(f"{what}: the ciphertext has degree 2 (mul(..., relinearize=False)); "
                         "relinearize it first (ckks.relinearize)")
    check_data(ct.data, ct.params, ct.level, (None,) if any_degree else (2,), what)


def _check_pt(pt, ctx, what):
    if pt.params != ctx.params:
        raise ValueError(f"{what}: plaintext is for {pt.params.name!r}, context for {ctx.params.name!r}")
    check_data(pt.data, pt.params, pt.level, (), what)


def _check_slots(a, b, what):
    if a.slots != b.slots:
        raise ValueError(f"{what}: operands pack different slot counts ({a.slots} vs {b.slots})")


def _is_number(x) -> bool:
    return isinstance(x, numbers.Number) and not isinstance(x, bool)


def _check_static_constant(x, what: str) -> None:
    """A traced value where a constant belongs: explain that constants are static."""
    if isinstance(x, jax.core.Tracer):
        raise TypeError(
            f"{what}: the constant is a traced value ({type(x).__name__}); constants are encoded on "
            "the host at the ciphertext's scale, so under jax.jit they must be static Python numbers: "
            "use jax.jit(f, static_argnums=...) or functools.partial(ckks.mul, c=...) / a closure")


def scales_match(s1: float, s2: float, params) -> bool:
    """Whether two scales agree within the relative tolerance 2^-(log_scale - 4)."""
    return abs(s1 / s2 - 1.0) <= 2.0 ** -(params.log_scale - 4)


def _const_ntt(c, scale: float, ctx: CKKSContext, rows, like) -> jax.Array:
    """The constant round(c scale) (complex: re + im X^(N/2)) in the NTT domain, broadcast to
    ``like`` (uint32[..., L, N])."""
    c = complex(c)
    if not (math.isfinite(c.real) and math.isfinite(c.imag)):
        raise ValueError(f"constant {c} is not finite")
    params = ctx.params
    level = params.levels.index(tuple(rows)) if tuple(rows) in params.levels else None
    if level is not None:  # round(c scale) must be a centered residue of the level's modulus
        check_fits(np.round(np.asarray([c.real * scale, c.imag * scale])), params, level, scale,
                   f"constant {c:g}")
    primes = [params.q_primes[r] for r in rows]
    re, im = int(round(c.real * scale)), int(round(c.imag * scale))
    out = jnp.broadcast_to(device_u32([re % q for q in primes])[:, None], like.shape)
    if im:
        unit = jnp.broadcast_to(take_static(ctx.imag, rows, 0), like.shape)
        ims = jnp.broadcast_to(device_u32([im % q for q in primes])[:, None], like.shape)
        out = ops.add_mod(out, ops.mul_mod(ims, unit, ctx.ring, rows), ctx.ring, rows)
    return out


def _mul_data(x, w, ctx, rows):
    """x: uint32[..., 2, L, N] times w: uint32[..., L, N] (broadcast over the component axis)."""
    w = jnp.expand_dims(w, -3)
    shape = jnp.broadcast_shapes(x.shape, w.shape)
    return ops.mul_mod(jnp.broadcast_to(x, shape), jnp.broadcast_to(w, shape), ctx.ring, rows)


# -- rescaling and levels -----------------------------------------------------------------------

def rescale_data(x, ctx: CKKSContext, level: int) -> jax.Array:
    """Rational rescaling of NTT data uint32[..., L_level, N] to level - 1: (x R - [x R]_D) / D."""
    t = ctx.rescale_tables(level)
    p = ctx.params
    drop, new = p.dropped(level), p.rows(level - 1)
    xd = take_limbs(x, t.drop_pos)
    c = ops.intt(xd, ctx.ring, drop)
    if p.added(level):
        c = ops.mul_limb_consts(c, t.r_mod_d, ctx.ring, drop)
    conv = ops.ntt(ops.exact_conv(c, t.conv), ctx.ring, new)
    xk = take_limbs(x, t.keep_pos)
    return ops.sub_mod(ops.mul_limb_consts(xk, t.r_dinv, ctx.ring, new),
                       ops.mul_limb_consts(conv, t.d_inv, ctx.ring, new), ctx.ring, new)


def rescale(ct: Ciphertext, ctx: CKKSContext) -> Ciphertext:
    """Divide by rho_level (drop the set D, add the set R): level - 1, scale / rho_level."""
    ctx = check_context(ctx, "rescale")
    check_ct(ct, ctx, "rescale", any_degree=True)
    if ct.level == 0:
        raise ValueError("rescale: the ciphertext is at level 0; no level left to rescale")
    rho = float(ct.params.ratio(ct.level))
    return ct.replace(data=rescale_data(ct.data, ctx, ct.level), level=ct.level - 1, scale=ct.scale / rho)


_rescale = rescale  # for functions whose ``rescale`` flag shadows the name


def mod_down_rescale(y, ctx: CKKSContext, level: int) -> jax.Array:
    """ModDown of extended-basis data y: uint32[..., L_level + alpha_p, N] (NTT, the level's
    key-switching ``ext_rows``: e.g. a double-hoisted sum of key products) and the rescale to
    level - 1: uint32[..., L_{level-1}, N]. One division by P D where the level allows
    (:func:`jax_fhe.rlwe.keyswitch.mod_down_divide`: one rounding, no NTT in between), else the
    two one after the other."""
    ctx = check_context(ctx, "mod_down_rescale")
    if not 0 < level <= ctx.params.max_level:
        raise ValueError(f"mod_down_rescale: level must be in [1, {ctx.params.max_level}], got {level}")
    tables = ctx.keyswitch_tables(level)
    if _divides(ctx, level):
        return keyswitch.mod_down_divide(y, ctx.ring, tables, ctx.params.dropped(level))
    return rescale_data(keyswitch.mod_down(y, ctx.ring, tables), ctx, level)


def _drop_limbs(x, params, level: int, target: int) -> jax.Array:
    rows = params.rows(level)
    return take_limbs(x, [rows.index(r) for r in params.rows(target)])


def _mul_int(ct: Ciphertext, c: int, ctx) -> Ciphertext:
    """Multiply by the integer c (scale times c)."""
    rows = ct.params.rows(ct.level)
    w = _const_ntt(c, 1.0, ctx, rows, ct.data[..., 0, :, :])
    return ct.replace(data=_mul_data(ct.data, w, ctx, rows), scale=ct.scale * c)


def _rescale_to(ct: Ciphertext, ctx, scale: float) -> Ciphertext:
    """One level down, landing within 1/(2c) of ``scale``: multiply by the integer
    c = round(scale rho / ct.scale), then rescale."""
    rho = float(ct.params.ratio(ct.level))
    c = int(round(scale * rho / ct.scale))
    if c < 1:
        raise ValueError(f"level_down: cannot reach scale 2^{np.log2(scale):.2f} from "
                         f"2^{np.log2(ct.scale):.2f} in one rescale (rho = 2^{np.log2(rho):.2f})")
    return rescale(_mul_int(ct, c, ctx), ctx)


def level_down(ct: Ciphertext, ctx: CKKSContext, level: int, *, scale: float | None = None) -> Ciphertext:
    """Bring ``ct`` down to ``level`` (and to ``scale`` if given; by default the scale is kept).

    Drops limbs when the target's primes are a subset and no scale change is needed (Cheddar's
    rule: never drop limbs unless the subset test passes). Otherwise each rescale multiplies by
    an integer c and divides by the level's ratio, landing within 1/(2c) of the scale it aims
    at: the scales aimed at move the factor over each level's default scale geometrically from
    the ciphertext's to the target's, so every c is about a level's scale, and limbs are dropped
    first only down to the lowest level from which the last c stays >= 2^(log_scale - 3) (the
    landing then within 2^-(log_scale-2), inside :func:`scales_match`). Raises ValueError when
    the levels in between cannot divide the scale down to the target."""
    ctx = check_context(ctx, "level_down")
    check_ct(ct, ctx, "level_down", any_degree=True)
    p = ct.params
    p.check_level(level)
    if level > ct.level:
        raise ValueError(f"level_down: target level {level} is above the ciphertext's level {ct.level}")
    target = ct.scale if scale is None else float(scale)
    if scales_match(ct.scale, target, p):
        if level == ct.level:
            return ct
        if p.is_subset(level, ct.level):
            return ct.replace(data=_drop_limbs(ct.data, p, ct.level, level), level=level)
    elif level == ct.level:
        raise ValueError(f"level_down: changing the scale from 2^{np.log2(ct.scale):.3f} to "
                         f"2^{np.log2(target):.3f} needs a rescale; target a lower level")
    # Drop limbs to the lowest level h from which the rescales still land precisely, then
    # rescale level by level along the planned scales.
    cur = ct
    start = cur.level
    for h in range(level + 1, cur.level):
        if p.is_subset(h, cur.level) and _path_ok(p, cur.scale, h, level, target):
            cur = cur.replace(data=_drop_limbs(cur.data, p, cur.level, h), level=h)
            break
    aims = _scale_path(p, cur.scale, cur.level, level, target)
    if min(_path_factors(p, cur.scale, cur.level, aims)) < 1:
        raise ValueError(f"level_down: cannot reach scale 2^{np.log2(target):.2f} at level {level} from "
                         f"2^{np.log2(ct.scale):.2f} at level {start}: each rescale can divide the scale by "
                         "at most its ratio; target a lower level")
    for aim in aims:
        cur = _rescale_to(cur, ctx, aim)
    return cur


def _scale_path(p, scale: float, start: int, level: int, target: float) -> list:
    """The scales to land on at start - 1, ..., level: the factor over each level's default
    scale moves geometrically from scale's (at ``start``) to target's (at ``level``), so that
    every rescale multiplies by an integer c of about the level's scale (never a small c: the
    landing error is 1/(2c) relative)."""
    e0 = math.log2(scale) - p.log_scales[start]
    e1 = math.log2(target) - p.log_scales[level]
    k = start - level
    aims = [2.0 ** (p.log_scales[l] + e1 + (e0 - e1) * (l - level) / k) for l in range(start - 1, level, -1)]
    return aims + [target]


def _path_factors(p, scale: float, start: int, aims: list) -> list:
    """The integers c of the rescales along ``aims`` from ``scale`` at ``start``."""
    out = []
    for l, aim in zip(range(start, start - len(aims), -1), aims):
        out.append(aim * float(p.ratio(l)) / scale)
        scale = aim
    return out


def _path_ok(p, scale: float, h: int, level: int, target: float) -> bool:
    """Whether rescaling from ``scale`` at h down to ``level`` lands within the scale tolerance
    (the last integer c >= 2^(log_scale - 3); 1/(2c) is then 4x inside scales_match's bound)."""
    c = _path_factors(p, scale, h, _scale_path(p, scale, h, level, target))
    return min(c) >= 1 and c[-1] >= 2.0 ** (p.log_scale - 3)


def _same_level(a: Ciphertext, b: Ciphertext, ctx, *, match_scale: bool):
    """Bring the higher of a, b down to the other's level: to the other's scale if
    ``match_scale``, else to the lower level's default scale if it was at its own level's
    default scale (so that default-scale circuits stay on default scales), else keeping it."""
    def target(hi, lo):
        if match_scale:
            return lo.scale
        p = hi.params
        return p.default_scale(lo.level) if scales_match(hi.scale, p.default_scale(hi.level), p) else None

    if a.level > b.level:
        a = level_down(a, ctx, b.level, scale=target(a, b))
    elif b.level > a.level:
        b = level_down(b, ctx, a.level, scale=target(b, a))
    if match_scale and not scales_match(a.scale, b.scale, a.params):
        lo, hi = (a, b) if a.scale < b.scale else (b, a)
        ratio = hi.scale / lo.scale
        if ratio < 2.0 ** (a.params.log_scale - 4):
            raise ValueError(
                f"incompatible scales 2^{np.log2(a.scale):.4f} and 2^{np.log2(b.scale):.4f} at "
                f"level {a.level}: rescale one operand or use level_down(..., scale=...)")
        lo = _mul_int(lo, int(round(ratio)), ctx)
        a, b = (lo, hi) if a.scale < b.scale else (hi, lo)
    return a, b


def _pt_at(pt: Plaintext, ct: Ciphertext, ctx, what):
    """The plaintext's data at the ciphertext's level (and the ciphertext, possibly lowered)."""
    _check_pt(pt, ctx, what)
    _check_slots(ct, pt, what)
    p = ct.params
    if pt.level < ct.level:
        ct = level_down(ct, ctx, pt.level)
    if pt.level > ct.level and not p.is_subset(ct.level, pt.level):
        raise ValueError(f"{what}: plaintext at level {pt.level} cannot be used at level {ct.level} "
                         "(its primes are not a superset); encode it at that level")
    return _drop_limbs(pt.data, p, pt.level, ct.level), ct


# -- addition -----------------------------------------------------------------------------------

def _operands(a, b, ctx, what, any_degree=False):
    """Validate a binary operation's operands: the ciphertext first; a second ciphertext must
    share the parameter set and slot count."""
    ctx = check_context(ctx, what)
    if not isinstance(a, Ciphertext) and isinstance(b, Ciphertext):
        a, b = b, a
    check_ct(a, ctx, what, any_degree=any_degree)
    _check_static_constant(b, what)
    if isinstance(b, Ciphertext):
        check_ct(b, ctx, what, any_degree=any_degree)
        _check_slots(a, b, what)
    return a, b, ctx


def _pad_size(x, size: int):
    """Ciphertext data uint32[..., k, L, N] padded with zero polynomials to ``size``."""
    k = x.shape[-3]
    if k == size:
        return x
    pad = [(0, 0)] * x.ndim
    pad[-3] = (0, size - k)
    return jnp.pad(x, pad)


def add(a: Ciphertext, b, ctx: CKKSContext) -> Ciphertext:
    """a + b for b a Ciphertext, a Plaintext or a (complex) number, with level/scale alignment."""
    a, b, ctx = _operands(a, b, ctx, "add", any_degree=True)
    if isinstance(b, Ciphertext):
        a, b = _same_level(a, b, ctx, match_scale=True)
        rows = a.params.rows(a.level)
        size = max(a.size, b.size)
        x, y = jnp.broadcast_arrays(_pad_size(a.data, size), _pad_size(b.data, size))
        return a.replace(data=ops.add_mod(x, y, ctx.ring, rows))
    rows = a.params.rows(a.level)
    if isinstance(b, Plaintext):
        data, a = _pt_at(b, a, ctx, "add")
        if not scales_match(a.scale, b.scale, a.params):
            raise ValueError(f"add: plaintext scale 2^{np.log2(b.scale):.4f} differs from the "
                             f"ciphertext's 2^{np.log2(a.scale):.4f}; encode it at scale=ct.scale")
        rows = a.params.rows(a.level)
    elif _is_number(b):
        data = _const_ntt(b, a.scale, ctx, rows, a.data[..., 0, :, :])
    else:
        raise TypeError(f"add: cannot add a {type(b).__name__} to a Ciphertext")
    c0 = a.data[..., 0, :, :]
    c0, data = jnp.broadcast_arrays(c0, data)
    rest = [jnp.broadcast_to(a.data[..., i, :, :], c0.shape) for i in range(1, a.size)]
    return a.replace(data=jnp.stack([ops.add_mod(c0, data, ctx.ring, rows)] + rest, axis=-3))


def neg(a: Ciphertext, ctx: CKKSContext) -> Ciphertext:
    """-a (any degree; level and scale unchanged)."""
    ctx = check_context(ctx, "neg")
    check_ct(a, ctx, "neg", any_degree=True)
    return a.replace(data=ops.neg_mod(a.data, ctx.ring, a.params.rows(a.level)))


def sub(a, b, ctx: CKKSContext) -> Ciphertext:
    """a - b (either may be a Plaintext or a number, not both)."""
    _check_static_constant(b, "sub")
    if isinstance(b, Ciphertext):
        return add(neg(b, ctx), a, ctx)
    if isinstance(b, Plaintext):
        return add(a, Plaintext(data=ops.neg_mod(b.data, check_context(ctx, "sub").ring,
                                                 b.params.rows(b.level)),
                                level=b.level, scale=b.scale, slots=b.slots, params=b.params), ctx)
    if _is_number(b):
        return add(a, -complex(b) if isinstance(b, complex) else -b, ctx)
    raise TypeError(f"sub: cannot subtract a {type(b).__name__}")


# -- multiplication -----------------------------------------------------------------------------

def relinearize_data(d0, d1, d2, ctx: CKKSContext, relin_key, level: int) -> jax.Array:
    """(d0, d1, d2) under (1, s, s^2) -> uint32[..., 2, L, N] under (1, s)."""
    rows = ctx.params.rows(level)
    u = keyswitch.key_switch(d2, relin_key, ctx.ring, ctx.keyswitch_tables(level))
    return jnp.stack([ops.add_mod(d0, u[..., 0, :, :], ctx.ring, rows),
                      ops.add_mod(d1, u[..., 1, :, :], ctx.ring, rows)], axis=-3)


def _divides(ctx: CKKSContext, level: int) -> bool:
    """Whether a key switch at ``level`` and the rescale after it can be one division by P D
    (:func:`jax_fhe.rlwe.keyswitch.key_switch_divide`): the rescale only drops primes, and the
    level's method can (hybrid with a plain ModDown)."""
    p = ctx.params
    if level == 0 or p.added(level):
        return False
    drop = p.dropped(level)
    return (tuple(r for r in p.rows(level) if r not in drop) == p.rows(level - 1)
            and keyswitch.can_divide(ctx.keyswitch_tables(level), drop))


def _const_scale(ct: Ciphertext, c, rescale_after: bool) -> float:
    """Scale at which to encode a constant multiplier: one that makes the next rescale land on
    the default scale of level - 1 (exact integers are multiplied at scale 1 when no rescale
    follows)."""
    if not rescale_after and isinstance(c, numbers.Integral):
        return 1.0
    p = ct.params
    if ct.level == 0:
        raise ValueError("mul: a non-integer constant needs a rescale, but the ciphertext is at level 0")
    return p.default_scale(ct.level - 1) * float(p.ratio(ct.level)) / ct.scale


def relinearize(ct: Ciphertext, ctx: CKKSContext, evk: EvalKeys) -> Ciphertext:
    """A degree-2 ciphertext (three polynomials, from ``mul(..., relinearize=False)``) back to
    two polynomials under s, with ``evk.relin``; a degree-1 ciphertext is returned as is."""
    ctx = check_context(ctx, "relinearize")
    check_ct(ct, ctx, "relinearize", any_degree=True)
    if ct.size == 2:
        return ct
    _check_relin_key(evk, ctx, "relinearize")
    d = ct.data
    return ct.replace(data=relinearize_data(d[..., 0, :, :], d[..., 1, :, :], d[..., 2, :, :], ctx,
                                            evk.relin, ct.level))


def _check_relin_key(evk, ctx, what):
    if not isinstance(evk, EvalKeys) or evk.relin is None:
        raise ValueError(f"{what}: ciphertext x ciphertext needs EvalKeys with a relinearization key")
    if evk.params != ctx.params:
        raise ValueError(f"{what}: keys are for {evk.params.name!r}, context for {ctx.params.name!r}")


def _check_room(ct: Ciphertext, what: str) -> Ciphertext:
    """Raise where a ciphertext's scale leaves the level's modulus no room for a message: it
    would decrypt to garbage (e.g. a product left unrescaled at level 0)."""
    log_q = math.log2(ct.params.modulus(ct.level))
    if math.log2(ct.scale) >= log_q - 1:
        raise ValueError(f"{what}: the result's scale 2^{math.log2(ct.scale):.1f} does not fit level "
                         f"{ct.level}'s modulus 2^{log_q:.1f} (it would decrypt to garbage); rescale "
                         f"(rescale=True) or multiply at a higher level")
    return ct


def mul(a: Ciphertext, b, ctx: CKKSContext, evk: EvalKeys | None = None, *, rescale: bool = True,
        relinearize: bool = True, const_scale: float | None = None) -> Ciphertext:
    """a * b for b a Ciphertext (relinearized with ``evk.relin`` unless ``relinearize=False``,
    which returns a degree-2 ciphertext), a Plaintext or a number; then one rescale unless
    ``rescale=False``. ``b`` as a number must be static under jit (see the module doc).

    ``const_scale`` (numbers only): encode the constant as round(b * const_scale) instead of at
    the scale that lands the rescaled result on the default scale of level - 1; the result's
    scale is then a.scale * const_scale (before the rescale). Circuits that keep their own scale
    plan (polynomial evaluation) use it to make every summand land on one scale."""
    a, b, ctx = _operands(a, b, ctx, "mul", any_degree=True)
    if const_scale is not None and not _is_number(b):
        raise TypeError("mul: const_scale applies to a number operand only")
    if const_scale is not None and not float(const_scale) > 0:
        raise ValueError(f"mul: const_scale must be positive, got {const_scale}")
    if isinstance(b, Ciphertext):
        if a.size != 2 or b.size != 2:
            raise ValueError("mul: ciphertext x ciphertext needs degree-1 operands; relinearize first")
        if relinearize:
            _check_relin_key(evk, ctx, "mul")
        a, b = _same_level(a, b, ctx, match_scale=False)
        rows = a.params.rows(a.level)
        x, y = jnp.broadcast_arrays(a.data, b.data)
        if relinearize:   # the three products fuse into the key switch's neighbours
            b1, a1, b2, a2 = x[..., 0, :, :], x[..., 1, :, :], y[..., 0, :, :], y[..., 1, :, :]
            mm = lambda u, v: ops.mul_mod(u, v, ctx.ring, rows)  # noqa: E731
            d1 = ops.add_mod(mm(b1, a2), mm(a1, b2), ctx.ring, rows)
            if rescale and _divides(ctx, a.level):  # relinearize and rescale: one division by P D
                d = jnp.stack([mm(b1, b2), d1], axis=-3)
                data = keyswitch.key_switch_divide(mm(a1, a2), evk.relin, ctx.ring, ctx.keyswitch_tables(a.level),
                                                   a.params.dropped(a.level), add=d)
                rho = float(a.params.ratio(a.level))
                return a.replace(data=data, level=a.level - 1, scale=a.scale * b.scale / rho)
            data = relinearize_data(mm(b1, b2), d1, mm(a1, a2), ctx, evk.relin, a.level)
        else:
            data = ops.tensor_product(x, y, ctx.ring, rows)
        out = a.replace(data=data, scale=a.scale * b.scale)
    elif isinstance(b, Plaintext):
        w, a = _pt_at(b, a, ctx, "mul")
        out = a.replace(data=_mul_data(a.data, w, ctx, a.params.rows(a.level)), scale=a.scale * b.scale)
    elif _is_number(b):
        sc = _const_scale(a, b, rescale) if const_scale is None else float(const_scale)
        rows = a.params.rows(a.level)
        w = _const_ntt(b, sc, ctx, rows, a.data[..., 0, :, :])
        out = a.replace(data=_mul_data(a.data, w, ctx, rows), scale=a.scale * sc)
    else:
        raise TypeError(f"mul: cannot multiply a Ciphertext by a {type(b).__name__}")
    return _rescale(out, ctx) if rescale else _check_room(out, "mul")


def mul_i(a: Ciphertext, ctx: CKKSContext) -> Ciphertext:
    """Multiply every slot by the imaginary unit (X^(N/2)): no level, no noise."""
    ctx = check_context(ctx, "mul_i")
    check_ct(a, ctx, "mul_i", any_degree=True)
    rows = a.params.rows(a.level)
    unit = take_static(ctx.imag, rows, 0)
    return a.replace(data=_mul_data(a.data, jnp.broadcast_to(unit, a.data.shape[:-3] + unit.shape), ctx, rows))
