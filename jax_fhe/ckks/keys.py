"""CKKS keys, generated from :class:`jax_fhe.rns.HostRandom` (os.urandom unless the caller
passes ``HostRandom.insecure_deterministic(seed)`` explicitly).

All key polynomials are NTT-domain device arrays over the rows of the context (q rows, then
special rows). Switching keys are "key switch first, automorphism after" (Cheddar's
convention): the key for the Galois element g switches a s into a form under sigma_g^-1(s), so
that a rotation is key_switch(a) followed by the automorphism, and many rotations of one
ciphertext can share one ModUp (hoisting).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import ops
from ..rlwe.hybrid import KeySwitchKey, gen_switching_key
from ..rns._pytree import pytree_dataclass, static_field
from ..rns.sampling import HostRandom, to_residues
from .context import CKKSContext, check_context
from .params import CKKSParams

NOISE_TAIL = 6.0  # Gaussian noise truncated at 6 sigma


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
    """Evaluation keys: ``relin`` (s^2 -> s), ``rotations`` {step: key} for slot rotations by
    ``step`` (0 < step < N/2), ``conjugation``. Missing keys are None / absent."""

    relin: KeySwitchKey | None
    rotations: dict
    conjugation: KeySwitchKey | None
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


def _rng(rng) -> HostRandom:
    if rng is None:
        return HostRandom()
    if not isinstance(rng, HostRandom):
        raise TypeError(f"rng must be a jax_fhe.rns.HostRandom (or None for os.urandom), got {type(rng).__name__}")
    return rng


def normalize_step(step: int, params: CKKSParams) -> int:
    """A rotation step as an integer in [0, N/2) (negative steps rotate right)."""
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError(f"rotation step must be an int, got {step!r}")
    return step % params.slots


def gen_secret_key(ctx: CKKSContext, rng: HostRandom | None = None) -> SecretKey:
    ctx = check_context(ctx, "gen_secret_key")
    p, rng = ctx.params, _rng(rng)
    if p.hamming_weight is None:
        s = rng.ternary((p.n,))
    else:
        s = rng.hamming_ternary(p.n, p.hamming_weight)[0]
    return SecretKey(s=ops.ntt(jnp.asarray(to_residues(s, p.all_primes)), ctx.ring), params=p)


def _check_sk(sk, ctx, what):
    if not isinstance(sk, SecretKey):
        raise TypeError(f"{what}: expected a SecretKey, got {type(sk).__name__}")
    if sk.params != ctx.params:
        raise ValueError(f"{what}: secret key is for {sk.params.name!r}, context for {ctx.params.name!r}")


def gen_public_key(ctx: CKKSContext, sk: SecretKey, rng: HostRandom | None = None) -> PublicKey:
    """(b, a) = (-a s + e, a) over every row, the special primes P included: encryption works in
    QP and divides by P (see :func:`jax_fhe.ckks.encrypt`)."""
    ctx = check_context(ctx, "gen_public_key")
    _check_sk(sk, ctx, "gen_public_key")
    p, rng = ctx.params, _rng(rng)
    primes = p.all_primes
    a = jnp.asarray(rng.uniform_mod(primes, p.n))
    e = ops.ntt(jnp.asarray(to_residues(rng.gaussian((p.n,), p.sigma, NOISE_TAIL), primes)), ctx.ring)
    b = ops.sub_mod(e, ops.mul_mod(a, sk.s, ctx.ring), ctx.ring)
    return PublicKey(data=jnp.stack([b, a]), params=p)


def _switching_key(ctx, sk, s_from, s_to, rng):
    p = ctx.params
    return gen_switching_key(ctx.ring, s_from, s_to, num_q=p.num_q, alpha=p.alpha, sigma=p.sigma,
                             rng=rng, tail=NOISE_TAIL)


def gen_relin_key(ctx: CKKSContext, sk: SecretKey, rng: HostRandom | None = None) -> KeySwitchKey:
    """Relinearization key: switches s^2 to s."""
    ctx = check_context(ctx, "gen_relin_key")
    _check_sk(sk, ctx, "gen_relin_key")
    return _switching_key(ctx, sk, ops.mul_mod(sk.s, sk.s, ctx.ring), sk.s, _rng(rng))


def gen_galois_key(ctx: CKKSContext, sk: SecretKey, galois: int, rng: HostRandom | None = None) -> KeySwitchKey:
    """Key for the automorphism X -> X^galois: switches s into a form under sigma^-1(s)."""
    ctx = check_context(ctx, "gen_galois_key")
    _check_sk(sk, ctx, "gen_galois_key")
    g_inv = pow(int(galois), -1, 2 * ctx.params.n)
    return _switching_key(ctx, sk, sk.s, ops.automorphism_ntt(sk.s, g_inv), _rng(rng))


def gen_rotation_keys(ctx: CKKSContext, sk: SecretKey, steps, rng: HostRandom | None = None) -> dict:
    """{step: key} for slot rotations by each step (normalized to [0, N/2); 0 is skipped)."""
    rng = _rng(rng)
    n = ctx.params.n
    norm = sorted({normalize_step(s, ctx.params) for s in steps} - {0})
    return {s: gen_galois_key(ctx, sk, ops.galois_element(s, n), rng) for s in norm}


def keygen(ctx: CKKSContext, rng: HostRandom | None = None, *, rotations=(), conjugation: bool = False,
           relin: bool = True) -> KeySet:
    """Secret, public, relinearization, rotation (for ``rotations`` steps) and conjugation
    keys. ``rng``: a HostRandom; None means os.urandom."""
    ctx = check_context(ctx, "keygen")
    rng = _rng(rng)
    sk = gen_secret_key(ctx, rng)
    pk = gen_public_key(ctx, sk, rng)
    evk = EvalKeys(
        relin=gen_relin_key(ctx, sk, rng) if relin else None,
        rotations=gen_rotation_keys(ctx, sk, rotations, rng),
        conjugation=gen_galois_key(ctx, sk, ops.conjugation_element(ctx.params.n), rng) if conjugation else None,
        params=ctx.params,
    )
    return KeySet(secret=sk, public=pk, evaluation=evk)
