"""CKKS keys, generated from :class:`jax_fhe.rns.HostRandom` (os.urandom unless the caller
passes ``HostRandom.insecure_deterministic(seed)`` explicitly).

``seed_a=True`` (every generator of a public or evaluation key): the key's uniform "a" parts
are drawn from a fresh public seed (``HostRandom.public``, the seed itself from ``rng``) and the
seed is recorded on the key, so that :mod:`jax_fhe.io` stores 32 bytes instead of them (half the
size of the key). The keys work exactly as unseeded ones.

All key polynomials are NTT-domain device arrays over the rows of the context (q rows, then
special rows). Switching keys are "key switch first, automorphism after" (Cheddar's
convention): the key for the Galois element g switches a s into a form under sigma_g^-1(s), so
that a rotation is key_switch(a) followed by the automorphism, and many rotations of one
ciphertext can share one ModUp (hoisting).
"""
from __future__ import annotations

import jax
import numpy as np

from .. import ops
from ..rlwe import encryption as rlwe_enc
from ..rlwe import galois as rlwe_galois
from ..rlwe import hybrid, keyswitch
from ..rlwe.encryption import NOISE_TAIL
from ..rns.progress import progress_bar, slow_keygen
from ..rns.pytree import pytree_dataclass, static_field
from ..rns.sampling import HostRandom, as_host_random, record_uniform_seed
from .context import CKKSContext, check_context
from .params import CKKSParams


@pytree_dataclass
class SecretKey:
    """s: uint32[T, N], the secret in the NTT domain over every row (q and special)."""

    s: jax.Array
    params: CKKSParams = static_field()

    def __repr__(self) -> str:
        return f"SecretKey({self.params.name!r})"


@pytree_dataclass
class PublicKey:
    """data: uint32[2, T, N] = (b, a) with b = -a s + e over every row (the q rows, then the
    special rows P)."""

    data: jax.Array
    params: CKKSParams = static_field()

    def __repr__(self) -> str:
        return f"PublicKey({self.params.name!r})"


@pytree_dataclass
class EvalKeys:
    """Evaluation keys (of the parameter set's key-switching method): ``relin`` (s^2 -> s),
    ``rotations`` {step: key} for slot rotations by ``step`` (0 < step < N/2),
    ``conjugation``. Missing keys are None / absent."""

    relin: object
    rotations: dict
    conjugation: object
    params: CKKSParams = static_field()

    def __repr__(self) -> str:
        return (f"EvalKeys({self.params.name!r}, relin={self.relin is not None}, "
                f"rotations={sorted(self.rotations)}, conjugation={self.conjugation is not None})")


@pytree_dataclass
class KeySet:
    """What :func:`keygen` returns: the secret, public and evaluation keys."""

    secret: SecretKey
    public: PublicKey
    evaluation: EvalKeys


def normalize_step(step: int, params: CKKSParams) -> int:
    """A rotation step as an integer in [0, N/2) (negative steps rotate right)."""
    if isinstance(step, jax.core.Tracer):
        raise TypeError("rotation step must be an int known at trace time (it selects a key and a "
                        "permutation), got a traced value: under jax.jit mark it static "
                        "(jax.jit(ckks.rotate, static_argnums=1)) or close over it")
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
        raise TypeError(f"rotation step must be an int, got {step!r}")
    step = int(step)
    return step % params.slots


def gen_secret_key(ctx: CKKSContext, rng: HostRandom | None = None) -> SecretKey:
    """A ternary secret (uniform, or of the parameter set's Hamming weight), in the NTT domain
    over every row of the context: :class:`SecretKey` (``rng``: None means os.urandom)."""
    ctx = check_context(ctx, "gen_secret_key")
    p = ctx.params
    s = rlwe_enc.sample_secret(p.n, as_host_random(rng), p.hamming_weight)
    return SecretKey(s=rlwe_enc.secret_ntt(s, ctx.ring), params=p)


def _check_sk(sk, ctx, what):
    if not isinstance(sk, SecretKey):
        raise TypeError(f"{what}: expected a SecretKey, got {type(sk).__name__}")
    if sk.params != ctx.params:
        raise ValueError(f"{what}: secret key is for {sk.params.name!r}, context for {ctx.params.name!r}")


def gen_public_key(ctx: CKKSContext, sk: SecretKey, rng: HostRandom | None = None, *,
                   seed_a: bool = False) -> PublicKey:
    """(b, a) = (-a s + e, a) over every row, the special primes P included: encryption works in
    QP and divides by P (see :func:`jax_fhe.ckks.encrypt`). ``seed_a``: a from a recorded
    public seed (see the module docstring)."""
    ctx = check_context(ctx, "gen_public_key")
    _check_sk(sk, ctx, "gen_public_key")
    p = ctx.params
    rng = as_host_random(rng)
    rows = range(len(p.all_primes))
    a_seed = rlwe_enc.new_seed(rng, seed_a)
    pk = PublicKey(data=rlwe_enc.gen_public_key(sk.s, ctx.ring, rows, rng, p.sigma, a_seed=a_seed), params=p)
    if a_seed is not None:
        record_uniform_seed(pk, rlwe_enc.seed_record(a_seed, ctx.ring, rows, ()))
    return pk


def _key_options(ctx) -> dict:
    """gen_key's arguments for the context's parameter set: its method(s) (one per level kind;
    several give a :class:`jax_fhe.rlwe.keyswitch.MultiKey`) and their options."""
    p = ctx.params
    return dict(num_q=p.num_q, alpha=p.alpha, sigma=p.sigma, tail=NOISE_TAIL, **dict(p.keyswitch_options))


def _methods(ctx) -> tuple:
    """The key-switching methods of the context's levels (of every level when it was restricted
    with for_levels: keys serve every level)."""
    return keyswitch.params_methods(ctx.params)


def gen_switching_key(ctx: CKKSContext, s_from, s_to, rng: HostRandom | None = None, *, tables=None,
                      seed_a: bool = False):
    """A key (of the parameter set's method) switching x s_from into a ciphertext under s_to,
    both NTT-domain uint32[T, N] over every row of the context. ``tables``: make the key for
    these key-switching tables only (e.g. fewer special primes; see
    :func:`jax_fhe.rlwe.gen_switching_key`). ``seed_a``: see the module docstring."""
    ctx = check_context(ctx, "gen_switching_key")
    rng = as_host_random(rng)
    return keyswitch.gen_key(_methods(ctx), ctx.ring, s_from, s_to, rng=rng, tables=tables,
                             a_seed=rlwe_enc.new_seed(rng, seed_a), **_key_options(ctx))


def gen_relin_key(ctx: CKKSContext, sk: SecretKey, rng: HostRandom | None = None, *, seed_a: bool = False):
    """Relinearization key: switches s^2 to s. ``seed_a``: see the module docstring."""
    ctx = check_context(ctx, "gen_relin_key")
    _check_sk(sk, ctx, "gen_relin_key")
    return gen_switching_key(ctx, ops.mul_mod(sk.s, sk.s, ctx.ring), sk.s, rng, seed_a=seed_a)


def gen_galois_key(ctx: CKKSContext, sk: SecretKey, galois: int, rng: HostRandom | None = None, *,
                   seed_a: bool = False):
    """Key for the automorphism X -> X^galois: switches s into a form under sigma^-1(s)
    (:func:`jax_fhe.rlwe.gen_galois_key`). ``seed_a``: see the module docstring."""
    ctx = check_context(ctx, "gen_galois_key")
    _check_sk(sk, ctx, "gen_galois_key")
    rng = as_host_random(rng)
    return rlwe_galois.gen_galois_key(_methods(ctx), ctx.ring, sk.s, galois, rng=rng,
                                      a_seed=rlwe_enc.new_seed(rng, seed_a), **_key_options(ctx))


def gen_rotation_keys(ctx: CKKSContext, sk: SecretKey, steps, rng: HostRandom | None = None,
                      *, progress: bool | None = None, seed_a: bool = False) -> dict:
    """{step: key} for slot rotations by each step (normalized to [0, N/2); 0 is skipped).
    ``progress``: show a progress bar (tqdm) over the keys (None: when there are many,
    :func:`jax_fhe.rns.slow_keygen`). ``seed_a``: see the module docstring."""
    rng = as_host_random(rng)
    n = ctx.params.n
    norm = sorted({normalize_step(s, ctx.params) for s in steps} - {0})
    norm = progress_bar(norm, progress, auto=slow_keygen(len(norm), n), desc="rotation keys", unit="key")
    return {s: gen_galois_key(ctx, sk, ops.galois_element(s, n), rng, seed_a=seed_a) for s in norm}


def restrict_key(key, ctx: CKKSContext, level: int):
    """``key`` cut to what key switching at ``level`` and every lower level reads (a hybrid key:
    the digits and rows of levels 0..level, :func:`jax_fhe.rlwe.hybrid.restrict_key`: the
    union, since a level need not hold the primes of the one below; at n16-boot's level 14, 30%
    of the memory); the same bits as the whole key there, refused (ValueError) above. Keys of
    another method (KLSS, a MultiKey) are returned as they are."""
    ctx = check_context(ctx, "restrict_key")
    p = ctx.params
    level = p.check_level(level)
    if not isinstance(key, hybrid.KeySwitchKey) or any(keyswitch.level_method(p, lv) != "hybrid"
                                                       for lv in range(level + 1)):
        return key
    return hybrid.restrict_key_rows(key, set().union(*(p.rows(lv) for lv in range(level + 1))), p.special_rows)


def keygen(ctx: CKKSContext, rng: HostRandom | None = None, *, rotations=(), conjugation: bool = False,
           relin: bool = True, progress: bool | None = None, seed_a: bool = False) -> KeySet:
    """Secret, public, relinearization, rotation (for ``rotations`` steps) and conjugation
    keys. ``rng``: a HostRandom; None means os.urandom. ``progress``: a progress bar over the
    rotation keys (None: when there are many). ``seed_a``: the public and evaluation keys' "a"
    parts come from recorded public seeds, so that :mod:`jax_fhe.io` stores them in half the
    size (see the module docstring)."""
    ctx = check_context(ctx, "keygen")
    rng = as_host_random(rng)
    sk = gen_secret_key(ctx, rng)
    pk = gen_public_key(ctx, sk, rng, seed_a=seed_a)
    conj = ops.conjugation_element(ctx.params.n)
    evk = EvalKeys(
        relin=gen_relin_key(ctx, sk, rng, seed_a=seed_a) if relin else None,
        rotations=gen_rotation_keys(ctx, sk, rotations, rng, progress=progress, seed_a=seed_a),
        conjugation=gen_galois_key(ctx, sk, conj, rng, seed_a=seed_a) if conjugation else None,
        params=ctx.params,
    )
    return KeySet(secret=sk, public=pk, evaluation=evk)
