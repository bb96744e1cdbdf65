"""Keys of BFV and BGV, generated from :class:`jax_fhe.rns.HostRandom` (os.urandom unless the
caller passes ``HostRandom.insecure_deterministic(seed)`` explicitly).

Every function takes a BFV or a BGV context; the only difference is the noise of public and
switching keys: e for BFV, t e for BGV (the context's ``error_factor``), so that BGV's key
switching adds a multiple of t. Key polynomials are NTT-domain device arrays over every row of
the context's ring (q rows, then special rows); switching keys are "key switch first" keys of
the parameter set's method (:mod:`jax_fhe.rlwe.galois`): the key of X -> X^g switches s into a
form under sigma_g^-1(s).

Slot rotations: rotating both rows of the 2 x N/2 slot matrix left by k is X -> X^(5^k)
(:func:`jax_fhe.ops.galois_element`), swapping the rows ("columns rotation") X -> X^(2N-1).
"""
from __future__ import annotations

import jax
import numpy as np

from .. import ops
from ..rlwe import encryption as rlwe_enc
from ..rlwe import galois as rlwe_galois
from ..rlwe import keyswitch
from ..rlwe.encryption import NOISE_TAIL
from ..rlwe.params import RLWEParams
from ..rns.pytree import pytree_dataclass, static_field
from ..rns.sampling import HostRandom, as_host_random


@pytree_dataclass
class SecretKey:
    """s: uint32[T, N], the secret in the NTT domain over every row (q and special)."""

    s: jax.Array
    params: RLWEParams = static_field()

    def __repr__(self) -> str:
        return f"SecretKey({self.params.name!r})"


@pytree_dataclass
class PublicKey:
    """data: uint32[2, T, N] = (b, a), b = -a s + f e over every row (f = 1 for BFV, t for BGV)."""

    data: jax.Array
    params: RLWEParams = static_field()

    def __repr__(self) -> str:
        return f"PublicKey({self.params.name!r})"


@pytree_dataclass
class EvalKeys:
    """Evaluation keys: ``relin`` (s^2 -> s), ``rotations`` {k: key} for rotating the rows left
    by k (0 < k < N/2), ``columns`` (the row swap). Missing keys are None / absent."""

    relin: object
    rotations: dict
    columns: object
    params: RLWEParams = static_field()

    def __repr__(self) -> str:
        return (f"EvalKeys({self.params.name!r}, relin={self.relin is not None}, "
                f"rotations={sorted(self.rotations)}, columns={self.columns is not None})")


@pytree_dataclass
class KeySet:
    """What :func:`keygen` returns: the secret, public and evaluation keys."""

    secret: SecretKey
    public: PublicKey
    evaluation: EvalKeys


def check_scheme_context(ctx, what: str):
    """Raise TypeError unless ``ctx`` is a BFV or BGV context."""
    if not all(hasattr(ctx, a) for a in ("ring", "params", "error_factor", "keyswitch_tables", "plain")):
        raise TypeError(f"{what}: expected a BFVContext or BGVContext (bfv.make_context / bgv.make_context), "
                        f"got {type(ctx).__name__}")
    return ctx


def check_secret_key(sk, ctx, what: str) -> SecretKey:
    if not isinstance(sk, SecretKey):
        raise TypeError(f"{what}: expected a SecretKey, got {type(sk).__name__}")
    if sk.params != ctx.params:
        raise ValueError(f"{what}: secret key is for {sk.params.name!r}, context for {ctx.params.name!r}")
    return sk


def check_eval_keys(evk, ctx, what: str) -> EvalKeys:
    if not isinstance(evk, EvalKeys):
        raise TypeError(f"{what}: expected EvalKeys, got {type(evk).__name__}")
    if evk.params != ctx.params:
        raise ValueError(f"{what}: keys are for {evk.params.name!r}, context for {ctx.params.name!r}")
    return evk


def normalize_step(step, params) -> int:
    """A row-rotation step as an int in [0, N/2) (negative steps rotate right)."""
    if isinstance(step, jax.core.Tracer):
        raise TypeError("rotation step must be an int known at trace time (it selects a key and a "
                        "permutation), got a traced value: under jax.jit mark it static "
                        "(jax.jit(bfv.rotate_rows, static_argnums=1)) or close over it")
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
        raise TypeError(f"rotation step must be an int, got {step!r}")
    return int(step) % (params.n // 2)


def gen_secret_key(ctx, rng: HostRandom | None = None) -> SecretKey:
    """A fresh secret key: ternary (or of the parameter set's Hamming weight), drawn from ``rng``
    (default: the system's cryptographic randomness), stored in the NTT domain over every row."""
    ctx = check_scheme_context(ctx, "gen_secret_key")
    p = ctx.params
    s = rlwe_enc.sample_secret(p.n, as_host_random(rng), p.hamming_weight)
    return SecretKey(s=rlwe_enc.secret_ntt(s, ctx.ring), params=p)


def gen_public_key(ctx, sk: SecretKey, rng: HostRandom | None = None) -> PublicKey:
    """(b, a) = (-a s + f e, a) over every row, the special primes included: public-key
    encryption works in QP and divides by P."""
    ctx = check_scheme_context(ctx, "gen_public_key")
    check_secret_key(sk, ctx, "gen_public_key")
    p = ctx.params
    data = rlwe_enc.gen_public_key(sk.s, ctx.ring, range(len(p.all_primes)), as_host_random(rng), p.sigma,
                                   NOISE_TAIL, ctx.error_factor)
    return PublicKey(data=data, params=p)


def _key_options(ctx) -> dict:
    p = ctx.params
    return dict(num_q=p.num_q, alpha=p.alpha, sigma=p.sigma, tail=NOISE_TAIL, error_factor=ctx.error_factor)


def gen_relin_key(ctx, sk: SecretKey, rng: HostRandom | None = None):
    """Relinearization key: switches s^2 to s (noise f e)."""
    ctx = check_scheme_context(ctx, "gen_relin_key")
    check_secret_key(sk, ctx, "gen_relin_key")
    return keyswitch.gen_key(ctx.params.keyswitch, ctx.ring, ops.mul_mod(sk.s, sk.s, ctx.ring), sk.s,
                             rng=as_host_random(rng), **_key_options(ctx))


def gen_galois_key(ctx, sk: SecretKey, galois: int, rng: HostRandom | None = None):
    """Key for X -> X^galois (:func:`jax_fhe.rlwe.gen_galois_key`, noise f e)."""
    ctx = check_scheme_context(ctx, "gen_galois_key")
    check_secret_key(sk, ctx, "gen_galois_key")
    return rlwe_galois.gen_galois_key(ctx.params.keyswitch, ctx.ring, sk.s, galois, rng=as_host_random(rng),
                                      **_key_options(ctx))


def gen_rotation_keys(ctx, sk: SecretKey, steps, rng: HostRandom | None = None, *,
                      progress: bool | None = None) -> dict:
    """{k: key} for rotating the rows left by each step k (normalized to [0, N/2); 0 skipped).
    ``progress``: a progress bar (tqdm) over the keys (None: when there are four or more at
    N >= 2^14)."""
    rng = as_host_random(rng)
    p = check_scheme_context(ctx, "gen_rotation_keys").params
    norm = sorted({normalize_step(s, p) for s in steps} - {0})
    if progress if progress is not None else (len(norm) >= 4 and p.n >= 1 << 14):
        from tqdm.auto import tqdm
        norm = tqdm(norm, desc="rotation keys", unit="key")
    return {s: gen_galois_key(ctx, sk, ops.galois_element(s, p.n), rng) for s in norm}


def keygen(ctx, rng: HostRandom | None = None, *, rotations=(), columns: bool = False, relin: bool = True,
           progress: bool | None = None) -> KeySet:
    """Secret, public, relinearization, row-rotation (for the ``rotations`` steps) and
    column-swap keys of a BFV or BGV context. ``rng``: a HostRandom; None means os.urandom."""
    ctx = check_scheme_context(ctx, "keygen")
    rng = as_host_random(rng)
    sk = gen_secret_key(ctx, rng)
    pk = gen_public_key(ctx, sk, rng)
    evk = EvalKeys(relin=gen_relin_key(ctx, sk, rng) if relin else None,
                   rotations=gen_rotation_keys(ctx, sk, rotations, rng, progress=progress),
                   columns=gen_galois_key(ctx, sk, ops.conjugation_element(ctx.params.n), rng) if columns else None,
                   params=ctx.params)
    return KeySet(secret=sk, public=pk, evaluation=evk)
