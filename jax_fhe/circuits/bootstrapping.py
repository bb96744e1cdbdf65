"""CKKS bootstrapping: a level-0 ciphertext back to a high level, as one jittable function.

The pipeline (Cheddar's, notes/ckks-32bit-design.md §3, with Lattigo's sparse-secret
encapsulation):

1. **Scale up** by the integer 2^k (no level): the message scale becomes about q0 / 2^r
   (r = ``log_message_ratio``), so that u = coefficient / q0 stays small.
2. **Dense -> sparse** key switch at level 0, with a key over q0 and a few special primes only
   (an RLWE sample under a sparse secret is secure only over a small modulus).
3. **ModRaise** to the top level: the phase becomes m + q0 I with |I| <= (h_sparse + 1) / 2.
4. **Sparse -> dense** key switch at the top level.
5. **Trace** (sparse slots n < N/2 only): the rotations by n, 2n, ..., N/4 project q0 I onto
   the subring that n slots live in (times N / 2n, folded into CtS's constant).
6. **CoeffToSlot** (:mod:`.dft`): slot k holds c (t_br(k) + i t_{n+br(k)}), the coefficients
   t = (m + q0 I) scaled so that, after the real/imaginary split (full slots) or the conjugate
   sum (packed sparse slots), each real slot holds u / K with u = t / q0, under the scale label
   of the EvalMod level (the label is *set*: every normalization is folded into the constant).
7. **EvalMod** (:mod:`.mod1`): u -> (1/2 pi) sin(2 pi u) ~ u - I = m / q0; full slots run the real
   and imaginary parts as one batch of two.
8. **SlotToCoeff**: back to slots, with the constant that makes the result the message at the
   default scale of the output level.

Levels (the parameter set's plan): CtS from the top level down to ``top - cts_levels``, EvalMod
``mod1.depth`` levels, StC ``stc_levels`` levels; by default StC starts at the parameter set's
encryption level (as in Cheddar: n16-boot 28 -> 24 -> 16 -> 13).

Objects: :class:`BootstrapConfig` (static choices), :class:`Bootstrapper` (a pytree of plans
and tables built once from a context: the encoded CtS/StC diagonals, ModRaise and small
key-switching tables), :class:`BootstrapKeys` (a pytree: evaluation keys with the rotations the
plans need, the two secret-switching keys). :func:`bootstrap` is pure: pass all three into
``jax.jit``; ``jax.vmap`` batches ciphertexts.
"""
from __future__ import annotations

import dataclasses
import math

import jax.numpy as jnp

from .. import ckks, ops
from ..ckks import CKKSContext, Ciphertext, EvalKeys, SecretKey
from ..rlwe import encryption as rlwe_enc
from ..rlwe import keyswitch
from ..rns.pytree import pytree_dataclass, static_field
from ..rns.sampling import HostRandom, as_host_random
from . import dft
from .mod1 import Mod1Params, eval_mod1

__all__ = ["STAGES", "BootstrapConfig", "BootstrapKeys", "Bootstrapper", "bootstrap", "cts_stage",
           "evalmod_stage", "gen_bootstrap_keys", "make_bootstrapper", "raise_stage", "stc_stage"]


@dataclasses.dataclass(frozen=True)
class BootstrapConfig:
    """Static choices of a bootstrapping circuit.

    slots:                 slots of the ciphertexts it refreshes (None: N/2, full slots).
    cts_levels:            CoeffToSlot phases (None: top level - EvalMod start, see below).
    stc_levels:            SlotToCoeff phases.
    stc_level:             the level StC starts at (None: the parameter set's encryption level).
    mod1:                  EvalMod parameters (K, degree, double angles, arcsine; by default
                           Cheddar's shape with the discrete fit for the sparse secret's I).
    sparse_hamming_weight: Hamming weight of the ephemeral sparse secret (bounds |I|).
    sse_special_primes:    special primes of the dense-to-sparse key (its modulus is q0 P_sse).
    bsgs_giant_cost:       the CtS/StC phases' BSGS split weighs a giant step as this many
                           baby steps (:func:`jax_fhe.circuits.lintrans.bsgs_split`). 3 (60
                           rotation keys at full slots) measured 0.8-1.0 ms faster than 2 (48
                           keys) and than 5 (75 keys) on an H200 (n16-boot, full slots).
    log_message_ratio:     r: the message is scaled to about q0 / 2^r before ModRaise (None:
                           5 + ceil((15 - log2 slots) / 2), at most log2(q0 / scale_0)). EvalMod
                           computes sin(2 pi u) / 2 pi ~ u for u = coefficient / q0, off by
                           (2 pi)^2 u^3 / 6; coefficients shrink like 1 / sqrt(slots), so fewer
                           slots need a larger r (Cheddar's full-slot N = 2^16 value is 5;
                           N = 2^12 full slots: 7 gives 2^-20.8 against 2^-16.8 with 5).
    """

    slots: int | None = None
    cts_levels: int | None = None
    stc_levels: int = 3
    stc_level: int | None = None
    mod1: Mod1Params = Mod1Params(fit_sigma=2.5)
    sparse_hamming_weight: int = 32
    sse_special_primes: int = 2
    bsgs_giant_cost: float = 3.0
    log_message_ratio: int | None = None


@pytree_dataclass
class Bootstrapper:
    """Everything :func:`bootstrap` needs besides the context and keys, built once by
    :func:`make_bootstrapper`: ``cts`` and ``stc`` (:class:`jax_fhe.circuits.dft.DFTPlan`),
    ``raise_tables`` (:class:`jax_fhe.ckks.ModRaiseTables`), ``sse_tables`` (the small
    key-switching tables of the dense-to-sparse switch at level 0). Static: ``config``,
    ``slots``, ``levels`` ((top, EvalMod start, StC start, output level)), ``cts_factor``,
    ``stc_factor``, ``em_scale`` (the EvalMod input label), ``out_scale``."""

    cts: dft.DFTPlan
    stc: dft.DFTPlan
    raise_tables: ckks.ModRaiseTables
    sse_tables: object
    config: BootstrapConfig = static_field()
    slots: int = static_field()
    levels: tuple = static_field()
    em_out_scale: float = static_field()
    out_scale: float = static_field()

    @property
    def packed(self) -> bool:
        """Whether the slots are sparse and packed two per real slot (n <= N/4)."""
        return self.cts.packed

    @property
    def output_level(self) -> int:
        """The level bootstrapped ciphertexts come out at."""
        return self.levels[-1]

    def rotation_steps(self) -> tuple:
        """Rotations the plans and the trace need keys for."""
        steps = set(dft.rotation_steps(self.cts, self.stc))
        steps |= set(_trace_steps(self.slots, self.cts.phases[0].params.n))
        return tuple(sorted(steps))

    def stc_only_steps(self) -> tuple:
        """Rotations only SlotToCoeff uses (at ``levels[2]`` and below): their keys are cut to
        that level (:func:`gen_bootstrap_keys`)."""
        steps = set(dft.rotation_steps(self.stc)) - set(dft.rotation_steps(self.cts))
        return tuple(sorted(steps - set(_trace_steps(self.slots, self.cts.phases[0].params.n))))

    def __repr__(self) -> str:
        top, em, stc, out = self.levels
        return (f"Bootstrapper(slots={self.slots}, CtS {top}->{em}, EvalMod {em}->{stc}, "
                f"StC {stc}->{out}, packed={self.packed})")


@pytree_dataclass
class BootstrapKeys:
    """``evk``: relinearization, conjugation and rotation keys; ``to_sparse`` (dense -> sparse at
    level 0, over the Bootstrapper's small tables only); ``to_dense`` (sparse -> dense, every
    level)."""

    evk: EvalKeys
    to_sparse: object
    to_dense: object


def _trace_steps(slots: int, n: int) -> tuple:
    steps, r = [], slots
    while r < n // 2:
        steps.append(r)
        r *= 2
    return tuple(steps)


def make_bootstrapper(ctx: CKKSContext, config: BootstrapConfig = BootstrapConfig()) -> Bootstrapper:
    """Plans and tables for bootstrapping with ``ctx``'s parameter set (host work: encodes the
    CtS and StC diagonals; at N = 2^16 this takes a while and a few GB of device memory)."""
    if not isinstance(ctx, CKKSContext):
        raise TypeError(f"make_bootstrapper: expected a CKKSContext, got {type(ctx).__name__}")
    if not isinstance(config, BootstrapConfig):
        raise TypeError(f"make_bootstrapper: expected a BootstrapConfig, got {type(config).__name__}")
    p = ctx.params
    n = p.slots if config.slots is None else int(config.slots)
    if n < 2 or n & (n - 1) or n > p.slots:
        raise ValueError(f"make_bootstrapper: slots must be a power of two in [2, N/2 = {p.slots}], got {n}")
    top = p.max_level
    stc_level = p.default_level if config.stc_level is None else p.check_level(config.stc_level)
    em_level = stc_level + config.mod1.depth
    cts_levels = top - em_level if config.cts_levels is None else int(config.cts_levels)
    out_level = stc_level - config.stc_levels
    if cts_levels < 1 or em_level + cts_levels > top or out_level < 0:
        raise ValueError(f"make_bootstrapper: {p.name} has levels 0..{top}; CtS ({cts_levels}) + EvalMod "
                         f"({config.mod1.depth}) from the top must end at StC's start {stc_level}, and StC "
                         f"({config.stc_levels}) must end at level >= 0")
    if em_level + cts_levels != top:
        top = em_level + cts_levels  # CtS starts below the top level: raise only that far
    packed = n < p.slots
    if packed and 2 * n > p.slots:
        raise ValueError("make_bootstrapper: sparse slots must be at most N/4")
    q0 = p.modulus(0)
    K = config.mod1.K
    em_scale = p.default_scale(em_level)
    trace = p.slots // n if packed else 1           # N / 2n: the trace multiplies by it
    # CtS: integer poly t -> slot value (t / q0) / K under the label em_scale, after the
    # doubling of the real/imaginary split or the conjugate sum: c = em_scale / (2 q0 K trace)
    cts_factor = em_scale / (2.0 * q0 * K * trace)
    # EvalMod ends on the scale its levels keep (s^2 / rho = s for s = rho of its last level,
    # ~2^58), not on the 40-bit level's default: the output u - I ~ m / q0 is small, and its
    # rescaling noise at 2^40 would cost ~5 bits (Cheddar keeps 2^58 through StC too).
    em_out = float(p.ratio(stc_level + 1))
    out_scale = p.default_scale(out_level)
    # StC: EvalMod leaves w = m / q0 under the label em_out; V w = (scale_in / q0) z, where
    # scale_in is the scaled-up input scale (a run-time label, set in bootstrap via
    # stc_factor * scale_in). Here the part that does not depend on it: out_scale q0 / em_out.
    stc_base = out_scale * q0 / em_out
    cts = dft.make_cts(ctx, n, top, cts_levels, factor=cts_factor, packed=packed,
                       giant_cost=config.bsgs_giant_cost)
    stc = dft.make_stc(ctx, n, stc_level, config.stc_levels, factor=stc_base / _nominal_scale(p, config, n),
                       packed=packed, giant_cost=config.bsgs_giant_cost)
    sse = keyswitch.level_tables(p, 0, special_rows=p.special_rows[:config.sse_special_primes])
    return Bootstrapper(cts=cts, stc=stc, raise_tables=ckks.make_mod_raise_tables(p, 0, top),
                        sse_tables=sse, config=config, slots=n,
                        levels=(top, em_level, stc_level, out_level), em_out_scale=em_out,
                        out_scale=out_scale)


def message_ratio_bits(params, config: BootstrapConfig, slots: int) -> int:
    """r (see :class:`BootstrapConfig`)."""
    room = round(math.log2(params.modulus(0))) - round(math.log2(params.default_scale(0)))
    if config.log_message_ratio is not None:
        r = int(config.log_message_ratio)
        if not 0 <= r <= room:
            raise ValueError(f"log_message_ratio {r} must be in [0, log2(q0 / scale_0) = {room}]")
        return r
    return min(room, 5 + -(-(15 - (int(slots).bit_length() - 1)) // 2))


def _scale_up_bits(params, config: BootstrapConfig, slots: int) -> int:
    """k: multiplying a level-0 ciphertext at level 0's default scale by 2^k brings its scale to
    about q0 / 2^r."""
    return (round(math.log2(params.modulus(0))) - round(math.log2(params.default_scale(0)))
            - message_ratio_bits(params, config, slots))


def _nominal_scale(params, config: BootstrapConfig, slots: int) -> float:
    """The scale after scaling up a ciphertext at level 0's default scale: StC's constant is
    built for it."""
    return params.default_scale(0) * 2.0 ** _scale_up_bits(params, config, slots)


def gen_bootstrap_keys(ctx: CKKSContext, sk: SecretKey, boot: Bootstrapper, rng: HostRandom | None = None,
                       *, progress: bool | None = None, seed_a: bool = False) -> BootstrapKeys:
    """The keys :func:`bootstrap` needs for secret key ``sk`` (dense): relinearization,
    conjugation, the rotations of ``boot.rotation_steps()`` (a progress bar when there are many:
    ``progress``), and the two secret-switching keys through a fresh sparse secret of Hamming
    weight ``boot.config.sparse_hamming_weight`` (sampled here, used only inside the keys).
    ``seed_a``: every key's uniform parts come from a recorded public seed, so that
    :mod:`jax_fhe.io` stores the keys in half the size (:mod:`jax_fhe.ckks.keys`).

    The rotation keys only SlotToCoeff uses are cut to its start level (``boot.levels[2]``,
    :func:`jax_fhe.ckks.restrict_key`: n16-boot levels 0..16, 3 of 4 digits on 39 of 59 rows): the
    same bits there and below; ``keys.evk`` refuses (ValueError) those steps above it."""
    if not isinstance(boot, Bootstrapper):
        raise TypeError(f"gen_bootstrap_keys: expected a Bootstrapper, got {type(boot).__name__}")
    rng = as_host_random(rng)
    p = ctx.params
    relin = ckks.gen_relin_key(ctx, sk, rng, seed_a=seed_a)
    rotations = ckks.gen_rotation_keys(ctx, sk, boot.rotation_steps(), rng, progress=progress, seed_a=seed_a)
    stc_only = set(boot.stc_only_steps())
    rotations = {s: ckks.restrict_key(k, ctx, boot.levels[2]) if s in stc_only else k for s, k in rotations.items()}
    evk = ckks.EvalKeys(relin=relin, rotations=rotations,
                        conjugation=ckks.gen_galois_key(ctx, sk, 2 * p.n - 1, rng, seed_a=seed_a), params=p)
    sparse = rlwe_enc.secret_ntt(rlwe_enc.sample_secret(p.n, rng, boot.config.sparse_hamming_weight), ctx.ring)
    to_sparse = ckks.gen_switching_key(ctx, sk.s, sparse, rng, tables=boot.sse_tables, seed_a=seed_a)
    to_dense = ckks.gen_switching_key(ctx, sparse, sk.s, rng, seed_a=seed_a)
    return BootstrapKeys(evk=evk, to_sparse=to_sparse, to_dense=to_dense)


def _check(ct, boot, keys):
    if not isinstance(boot, Bootstrapper):
        raise TypeError(f"bootstrap: expected a Bootstrapper, got {type(boot).__name__}")
    if not isinstance(keys, BootstrapKeys):
        raise TypeError(f"bootstrap: expected BootstrapKeys, got {type(keys).__name__}")
    if not isinstance(ct, Ciphertext):
        raise TypeError(f"bootstrap: expected a Ciphertext, got {type(ct).__name__}")
    if ct.slots != boot.slots:
        raise ValueError(f"bootstrap: the bootstrapper is for {boot.slots} slots, the ciphertext packs {ct.slots}")


def raise_stage(ct: Ciphertext, ctx: CKKSContext, boot: Bootstrapper, keys: BootstrapKeys) -> Ciphertext:
    """Steps 1-5: level 0, scale up, dense -> sparse, ModRaise, sparse -> dense, trace. Returns
    the ciphertext at the CtS level whose phase is the scaled message plus q0 I."""
    _check(ct, boot, keys)
    p, cfg = ctx.params, boot.config
    # level 0 at its default scale (StC's constant was built for it), then scale up by 2^k
    ct = ckks.level_down(ct, ctx, 0, scale=p.default_scale(0)) if ct.level else ct
    if not ckks.scales_match(ct.scale, p.default_scale(0), p):
        raise ValueError(f"bootstrap: a level-0 input must be at level 0's default scale "
                         f"2^{math.log2(p.default_scale(0)):.3f}, got 2^{math.log2(ct.scale):.3f}")
    ct = ckks.mul(ct, 1 << _scale_up_bits(p, cfg, boot.slots), ctx, rescale=False)
    ct = ckks.switch_key(ct, keys.to_sparse, ctx, boot.sse_tables)
    ct = ckks.mod_raise(ct, ctx, boot.raise_tables)
    ct = ckks.switch_key(ct, keys.to_dense, ctx)
    for r in _trace_steps(boot.slots, p.n):  # onto the sparse slots' subring (times N / 2n)
        ct = ckks.add(ct, ckks.rotate(ct, r, ctx, keys.evk), ctx)
    return ct


def cts_stage(ct: Ciphertext, ctx: CKKSContext, boot: Bootstrapper, keys: BootstrapKeys) -> Ciphertext:
    """Step 6: CoeffToSlot, then the EvalMod level's scale label."""
    ct = dft.coeffs_to_slots(ct, boot.cts, ctx, keys.evk)
    return dataclasses.replace(ct, scale=ctx.params.default_scale(boot.levels[1]))


def evalmod_stage(ct: Ciphertext, ctx: CKKSContext, boot: Bootstrapper, keys: BootstrapKeys) -> Ciphertext:
    """Step 7: EvalMod (full slots: the real and imaginary parts as one batch of two)."""
    cfg, evk = boot.config, keys.evk
    if boot.packed:
        ct = dft.conj_add(ct, ctx, evk)
        return eval_mod1(ct, cfg.mod1, ctx, evk, scale=boot.em_out_scale)
    re, im = dft.real_imag_split(ct, ctx, evk)
    both = dataclasses.replace(re, data=jnp.stack([re.data, im.data], axis=-4))
    both = eval_mod1(both, cfg.mod1, ctx, evk, scale=boot.em_out_scale)
    re, im = (dataclasses.replace(both, data=both.data[..., i, :, :, :]) for i in (0, 1))
    return ckks.add(re, ckks.mul_i(im, ctx), ctx)


def stc_stage(ct: Ciphertext, ctx: CKKSContext, boot: Bootstrapper, keys: BootstrapKeys) -> Ciphertext:
    """Step 8: SlotToCoeff, then the output level's default scale label."""
    ct = dft.slots_to_coeffs(ct, boot.stc, ctx, keys.evk)
    return dataclasses.replace(ct, scale=boot.out_scale)


STAGES = (("raise", raise_stage), ("cts", cts_stage), ("evalmod", evalmod_stage), ("stc", stc_stage))
# CUDA graphs end after CtS and after EvalMod (ops.graph_break), so that the host's launch of
# the next graph overlaps the GPU's run of the one before
_GRAPH_BREAKS_BEFORE = ("evalmod", "stc")


def bootstrap(ct: Ciphertext, ctx: CKKSContext, boot: Bootstrapper, keys: BootstrapKeys) -> Ciphertext:
    """Refresh ``ct`` (any level; brought to level 0 first, at level 0's default scale): returns
    the same message at ``boot.output_level`` and its default scale. Pure and jittable (all
    arguments are pytrees: jit it with the context, bootstrapper and keys as arguments);
    ``jax.vmap`` over a batch of ciphertexts gives the same bits as one by one. The stages
    (:data:`STAGES`) can be run and timed apart."""
    _check(ct, boot, keys)
    for name, stage in STAGES:
        if name in _GRAPH_BREAKS_BEFORE:
            ct = ct.replace(data=ops.graph_break(ct.data))
        ct = stage(ct, ctx, boot, keys)
    return ct
