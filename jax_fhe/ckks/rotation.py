"""Slot rotations, conjugation and hoisted rotations.

Rotation by r (out[j] = in[j + r], i.e. ``np.roll(z, -r)``) is the automorphism X -> X^(5^r);
conjugation is X -> X^(2N-1). With "key switch first" keys (:mod:`jax_fhe.ckks.keys`), a
rotation of (b, a) is

    (u0, u1) = key_switch(a),   out = sigma((b + u0, u1)),

so several rotations of one ciphertext share the ModUp of a (:func:`rotate_hoisted`): one ModUp,
then per step one key inner product, one ModDown and one automorphism.
"""
from __future__ import annotations

from collections.abc import Sequence

from .. import ops
from ..rlwe import galois
from .context import CKKSContext, check_context
from .evaluator import check_ct
from .keys import EvalKeys, normalize_step
from .types import Ciphertext


def _check_keys(evk, ctx, what):
    if not isinstance(evk, EvalKeys):
        raise TypeError(f"{what}: expected EvalKeys, got {type(evk).__name__}")
    if evk.params != ctx.params:
        raise ValueError(f"{what}: keys are for {evk.params.name!r}, context for {ctx.params.name!r}")


def _rotation_key(evk: EvalKeys, step: int):
    key = evk.rotations.get(step)
    if key is None:
        raise ValueError(f"no rotation key for step {step}; keys exist for steps "
                         f"{sorted(evk.rotations)} (generate them with keygen(..., rotations=[...]))")
    return key


def _apply(ct, ctx, key, g):
    return ct.replace(data=galois.apply_galois(ct.data, g, key, ctx.ring, ctx.keyswitch_tables(ct.level)))


def rotate(ct: Ciphertext, step: int, ctx: CKKSContext, evk: EvalKeys) -> Ciphertext:
    """Rotate the slots left by ``step`` (negative: right); needs the key for step mod N/2.
    ``step`` is static (a Python int; under jit mark it static)."""
    ctx = check_context(ctx, "rotate")
    check_ct(ct, ctx, "rotate")
    _check_keys(evk, ctx, "rotate")
    step = normalize_step(step, ctx.params)
    if step == 0:
        return ct
    return _apply(ct, ctx, _rotation_key(evk, step), ops.galois_element(step, ctx.params.n))


def conjugate(ct: Ciphertext, ctx: CKKSContext, evk: EvalKeys) -> Ciphertext:
    """Complex conjugation of every slot."""
    ctx = check_context(ctx, "conjugate")
    check_ct(ct, ctx, "conjugate")
    _check_keys(evk, ctx, "conjugate")
    if evk.conjugation is None:
        raise ValueError("conjugate: no conjugation key (generate it with keygen(..., conjugation=True))")
    return _apply(ct, ctx, evk.conjugation, ops.conjugation_element(ctx.params.n))


def rotate_hoisted(ct: Ciphertext, steps: Sequence[int], ctx: CKKSContext, evk: EvalKeys) -> list:
    """[rotate(ct, s) for s in steps] with one shared ModUp of the ciphertext's ``a``."""
    ctx = check_context(ctx, "rotate_hoisted")
    check_ct(ct, ctx, "rotate_hoisted")
    _check_keys(evk, ctx, "rotate_hoisted")
    norm = [normalize_step(s, ctx.params) for s in steps]
    keys = {s: _rotation_key(evk, s) for s in norm if s}
    n = ctx.params.n
    moved = galois.apply_galois_hoisted(ct.data, [(ops.galois_element(s, n), keys[s]) for s in keys],
                                        ctx.ring, ctx.keyswitch_tables(ct.level))
    by_step = dict(zip(keys, moved))
    return [ct if s == 0 else ct.replace(data=by_step[s]) for s in norm]
