"""Secrets, secret- and public-key encryption and decryption, shared by every RLWE scheme.

Everything here works on plain arrays over chosen rows of an :class:`jax_fhe.rns.RNSContext`
(``rows``: which primes the L limbs use), so a scheme decides its levels and wraps the result in
its own types. Randomness comes only from :class:`jax_fhe.rns.HostRandom` (os.urandom unless a
test passes an explicitly insecure one): an encryption draws one 256-bit key there; the device
expands it into the ternary ``v``, the Gaussian noise and a secret-key encryption's uniform ``a``
(:func:`jax_fhe.ops.sample_small`, :func:`jax_fhe.ops.sample_uniform`: ChaCha20, one stream per
polynomial) inside the one jitted program that does the arithmetic; a seeded ``a`` (``a_seed``)
comes from its public SHAKE-256 stream on the host. ``rng`` may also be that key itself
(uint32[8]): then encryption is jittable (pass a fresh key per call as an argument; a key
encrypts once). What would repeat one draw at every call is refused (:func:`encryption_key`):
a HostRandom or a concrete key inside ``jax.jit``, and ``jax.vmap`` (one key for every entry;
encryption takes batched plaintexts as they are). Decryption is jittable.

Component order (:mod:`.ciphertext`): (c0, c1) = (b, a) with b = m + e - a s, phase c0 + c1 s.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import unsafe_am_i_under_a_jit_DO_NOT_USE

from .. import ops
from ..rns.context import RNSContext
from ..rns.pytree import host_u32
from ..rns.sampling import (SEED_BYTES, TERNARY, HostRandom, SeededUniform, SmallTable, as_host_random, gaussian_table,
                            is_device_key, to_residues, uniform_residues)
from ..rns.shoup import device_u32

NOISE_TAIL = 6.0  # discrete Gaussian noise truncated at 6 sigma


def sample_secret(n: int, rng: HostRandom | None = None, hamming_weight: int | None = None) -> np.ndarray:
    """A ternary secret int8[N]: uniform over {-1, 0, 1}, or with exactly ``hamming_weight``
    nonzero entries."""
    rng = as_host_random(rng)
    if hamming_weight is None:
        return rng.ternary((int(n),))
    return rng.hamming_ternary(int(n), int(hamming_weight))[0]


def secret_ntt(s, ring: RNSContext, rows: Sequence[int] | None = None) -> jax.Array:
    """A small signed secret int[..., N] -> NTT-domain residues uint32[..., L, N] on ``rows`` of
    ``ring`` (default: every row)."""
    rows = tuple(range(len(ring.primes))) if rows is None else tuple(rows)
    return ops.ntt(jnp.asarray(to_residues(np.asarray(s), ring.primes_for(rows))), ring, rows)


def noise_ntt(shape: tuple, ring: RNSContext, rows: Sequence[int], rng, sigma: float,
              tail: float = NOISE_TAIL, error_factor: int = 1) -> jax.Array:
    """Discrete Gaussian noise polynomials of batch shape ``shape`` (last axis N), times the
    integer ``error_factor`` (BGV: the plaintext modulus t), in the NTT domain on ``rows``:
    uint32[*shape[:-1], L, N], drawn on the device from a key ``rng`` gives (or is)."""
    factor = check_error_factor(error_factor)
    return _noise_program(encryption_key(rng, None, "noise_ntt"), ring, shape=tuple(int(d) for d in shape), rows=tuple(rows),
                          table=gaussian_table(sigma, tail), factor=factor)


@functools.partial(jax.jit, static_argnames=("shape", "rows", "table", "factor"))
def _noise_program(key, ring, *, shape, rows, table, factor):
    return _sampled_ntt(key, 0, shape, ring, rows, table, factor)


def _sampled_ntt(key, stream: int, shape: tuple, ring: RNSContext, rows: tuple, table: SmallTable,
                 factor: int = 1) -> jax.Array:
    """Small polynomials int32[*shape] of ``table`` drawn from stream ``stream`` of ``key``, times
    ``factor``, in the NTT domain on ``rows``: uint32[*shape[:-1], L, N] (traced inside the
    encryption programs)."""
    x = ops.ntt_lift(ops.sample_small(key, shape, table, stream), ring, rows=rows)
    if factor == 1:
        return x
    # NTT(f e) = f NTT(e): f |e| may pass int32 (BGV's t)
    return ops.mul_limb_consts(x, host_u32([factor % q for q in ring.primes_for(rows)]), ring, rows)


def encryption_key(rng, m, what: str, *, a_seed=None) -> jax.Array:
    """The device-sampler key of one encryption of ``m``: ``rng`` itself when it is a key
    (uint32[8]; inside ``jax.jit`` it must be an argument of the jitted function), else a fresh
    one drawn from the HostRandom ``rng`` (None: os.urandom). Refused, because the draw would be
    baked into the compiled program and repeated at every call: a HostRandom, a concrete key or a
    host-drawn ``a_seed`` inside ``jax.jit`` (or ``jax.eval_shape``), and a HostRandom under
    ``jax.vmap``. A public stream (``HostRandom.public``) is refused as noise."""
    staging = _staging()
    if is_device_key(rng):
        if staging and not isinstance(rng, jax.core.Tracer):
            raise TypeError(f"{what}: a concrete device key inside jax.jit would be baked into the program and "
                            "reused at every call; pass the key as an argument of the jitted function")
        if a_seed is not None and (staging or isinstance(m, jax.core.Tracer)):
            raise TypeError(f"{what}: a seeded a (seed_a) is drawn on the host and cannot be traced")
        return jnp.asarray(rng)
    if staging or isinstance(m, jax.core.Tracer):
        raise TypeError(f"{what}: with a HostRandom (or rng=None) encryption draws fresh randomness on the "
                        "host at each call, so inside jax.jit or jax.vmap the draw would be baked into the "
                        "program and repeated; inside jax.jit pass a fresh device key as an argument of the "
                        "jitted function (rng=HostRandom().device_key(), one per call), or encrypt outside "
                        "it (encryption takes a batch of plaintexts without vmap)")
    rng = as_host_random(rng)
    if rng.is_public:
        raise ValueError(f"{what}: HostRandom.public is a public stream for public data; noise must come from "
                         "a secret one (HostRandom(), or insecure_deterministic in tests)")
    return rng.device_key()


def _staging() -> bool:
    """Whether a jax.jit (or eval_shape) trace is being recorded. jax.extend's check reads the
    trace stack (about 1 us); probing with array operations costs eager dispatches (an H200
    machine gave 1.3 ms a public-key encryption with such a probe, 0.6-0.9 ms without, in
    different calls)."""
    return unsafe_am_i_under_a_jit_DO_NOT_USE()


def _tied(key, m):
    """``key``, made to depend on the data of ``m`` (XLA folds the dependence away): under
    jax.vmap over m the key is then batched too and the sampler refuses, instead of drawing
    every entry's noise from the one key."""
    return key ^ (jnp.sum(m.reshape(-1)[:1], dtype=jnp.uint32) & jnp.uint32(0))


def check_error_factor(error_factor) -> int:
    """``error_factor`` as a positive int below 2^31 (TypeError/ValueError otherwise)."""
    if isinstance(error_factor, bool) or not isinstance(error_factor, (int, np.integer)):
        raise TypeError(f"error_factor must be an int (1, or BGV's plaintext modulus t), got {error_factor!r}")
    if not 1 <= int(error_factor) < 1 << 31:
        raise ValueError(f"error_factor must be in [1, 2^31), got {error_factor}")
    return int(error_factor)


def uniform(batch: tuple, ring: RNSContext, rows: Sequence[int], rng: HostRandom) -> jax.Array:
    """Uniform residues uint32[*batch, L, N] on ``rows`` (uniform in either domain)."""
    return jnp.asarray(uniform_residues(rng, ring.primes_for(rows), tuple(batch), ring.n))


def new_seed(rng: HostRandom | None, seeded: bool) -> bytes | None:
    """A fresh public seed for a seeded ``a`` (drawn from ``rng``), or None when not ``seeded``."""
    if seeded and is_device_key(rng):
        raise TypeError("seed_a: the public seed is drawn from a HostRandom (or rng=None), not from a device key")
    return as_host_random(rng).bytes(SEED_BYTES) if seeded else None


def seed_record(a_seed: bytes, ring: RNSContext, rows: Sequence[int], batch: tuple, *, field: str = "data",
                limbs: int | None = None) -> SeededUniform:
    """The :class:`jax_fhe.rns.SeededUniform` record of data [*batch, 2, limbs, N] whose "a"
    component was drawn by :func:`encrypt_sk` with ``a_seed`` on ``rows`` of ``ring`` (and, with
    ``limbs``, scattered into limb positions ``rows`` of that many limbs)."""
    rows = tuple(int(r) for r in rows)
    return SeededUniform(field=field, axis=-3, index=1, seed=bytes(a_seed), moduli=ring.primes_for(rows),
                         batch=tuple(int(b) for b in batch), n=ring.n,
                         rows=None if limbs is None else rows, limbs=None if limbs is None else int(limbs))


def encrypt_sk(m, s, ring: RNSContext, rows: Sequence[int], rng, sigma: float,
               tail: float = NOISE_TAIL, error_factor: int = 1, *, a_seed: bytes | None = None) -> jax.Array:
    """Secret-key encryptions of NTT-domain messages ``m``: uint32[..., L, N] on ``rows``, under the
    NTT-domain secret ``s`` (uint32[L, N] on the same rows). Returns uint32[..., 2, L, N] (NTT):
    (m + f e - a s, a) with a uniform, e discrete Gaussian and f = ``error_factor`` (1; BGV
    passes its plaintext modulus t, so that the noise vanishes mod t). ``rng``: a HostRandom
    (None: os.urandom) or a device key uint32[8] (:func:`encryption_key`).

    ``a_seed`` (bytes): draw a from the public stream ``HostRandom.public(a_seed)`` on the host
    instead of from ``rng``'s key on the device (e still comes from ``rng``), so that a can be
    stored as the seed
    (:func:`seed_record`, :mod:`jax_fhe.io`)."""
    key = encryption_key(rng, m, "encrypt_sk", a_seed=a_seed)
    rows = tuple(rows)
    m = jnp.asarray(m)
    batch = tuple(m.shape[:-2])
    factor = check_error_factor(error_factor)
    # the host draws the key; the device samples e and a (a seeded a comes from its public
    # stream on the host, so that jax_fhe.io can redraw it from the seed)
    a = None if a_seed is None else uniform_residues(HostRandom.public(bytes(a_seed)), ring.primes_for(rows),
                                                     batch, ring.n)
    return _encrypt_sk_program(m, s, a, key, ring, rows=rows,
                               table=gaussian_table(sigma, tail), factor=factor)


@functools.partial(jax.jit, static_argnames=("rows", "table", "factor"))
def _encrypt_sk_program(m, s, a, key, ring, *, rows, table, factor):
    """encrypt_sk after the host draws: (m + f e - a s, a), e from stream 0 of ``key``, a (when
    not given) uniform from its stream 1."""
    batch = tuple(m.shape[:-2])
    key = _tied(key, m)
    if a is None:
        a = ops.sample_uniform(key, batch, ring, rows, stream=1)
    e = _sampled_ntt(key, 0, batch + (ring.n,), ring, rows, table, factor)
    b = ops.sub_mod(ops.add_mod(m, e, ring, rows), ops.mul_mod(a, jnp.broadcast_to(s, a.shape), ring, rows),
                    ring, rows)
    return jnp.stack([b, a], axis=-3)


def gen_public_key(s, ring: RNSContext, rows: Sequence[int], rng: HostRandom | None, sigma: float,
                   tail: float = NOISE_TAIL, error_factor: int = 1, *, a_seed: bytes | None = None) -> jax.Array:
    """An encryption of zero under ``s`` on ``rows``: uint32[2, L, N] = (-a s + f e, a),
    f = ``error_factor`` (``a_seed``: see :func:`encrypt_sk`)."""
    rows = tuple(rows)
    return encrypt_sk(jnp.zeros((len(rows), ring.n), jnp.uint32), s, ring, rows, rng, sigma, tail,
                      error_factor, a_seed=a_seed)


def encrypt_pk(m, pk, ring: RNSContext, rows: Sequence[int], rng, sigma: float,
               tables=None, tail: float = NOISE_TAIL, error_factor: int = 1) -> jax.Array:
    """Public-key encryptions of NTT-domain messages ``m``: uint32[..., L, N] on ``rows``.

    Without ``tables``: (v pk_0 + f e0 + m, v pk_1 + f e1) on ``rows`` (``pk``: uint32[2, T, N]
    over the ring's rows, v a uniform ternary polynomial, f = ``error_factor``). With
    key-switching ``tables`` for ``rows`` (:mod:`.keyswitch`) the encryption runs in the
    extended basis QP and divides by P: ((v pk_0 + f e0 + P m, v pk_1 + f e1)) / P, so that the
    noise v e + e0 + e1 s shrinks by P and only the division's rounding remains
    (|eps0 + eps1 s| ~ sqrt(h / 12) instead of ~ sigma sqrt(N)); tables made with a plaintext
    modulus t (BGV) divide with the t-correction, which keeps the phase mod t (the rounding
    term is then a multiple of t). Returns uint32[..., 2, L, N] (NTT). ``rng``: a HostRandom
    (None: os.urandom) or a device key uint32[8] (:func:`encryption_key`)."""
    key = encryption_key(rng, m, "encrypt_pk")
    rows = tuple(rows)
    m = jnp.asarray(m)
    if tables is not None and tuple(tables.rows) != rows:
        raise ValueError(f"encrypt_pk: the key-switching tables are for rows {tables.rows}, not {rows}")
    factor = check_error_factor(error_factor)
    return _encrypt_pk_program(m, pk, key, ring, tables, rows=rows,
                               table=gaussian_table(sigma, tail), factor=factor)


@functools.partial(jax.jit, static_argnames=("rows", "table", "factor"))
def _encrypt_pk_program(m, pk, key, ring, tables, *, rows, table, factor):
    """encrypt_pk after the host draw of ``key``: v (ternary), e0, e1 from its streams 0, 1, 2."""
    from . import keyswitch  # the interface imports this module's helpers for key generation

    enc_rows = rows if tables is None else keyswitch.extended_rows(tables)
    shape = tuple(m.shape[:-2]) + (len(enc_rows), ring.n)
    poly = tuple(m.shape[:-2]) + (ring.n,)
    key = _tied(key, m)
    v = _sampled_ntt(key, 0, poly, ring, enc_rows, TERNARY)
    e0, e1 = (_sampled_ntt(key, i, poly, ring, enc_rows, table, factor) for i in (1, 2))
    pk = ops.take_static(pk, enc_rows, -2, max_runs=1)
    full = lambda x: jnp.broadcast_to(x, shape)  # noqa: E731
    c0 = ops.add_mod(ops.mul_mod(v, full(pk[0]), ring, enc_rows), e0, ring, enc_rows)
    c1 = ops.add_mod(ops.mul_mod(v, full(pk[1]), ring, enc_rows), e1, ring, enc_rows)
    nl = len(rows)
    if tables is None:
        return jnp.stack([ops.add_mod(c0, m, ring, rows), c1], axis=-3)
    # + P m on the basis rows (P m = 0 mod the special primes), then divide by P
    big_p = math.prod(ring.primes[r] for r in tables.special_rows)
    pm = ops.mul_limb_consts(m, device_u32([big_p % q for q in ring.primes_for(rows)]), ring, rows)
    c0 = c0.at[..., :nl, :].set(ops.add_mod(c0[..., :nl, :], pm, ring, rows))
    return keyswitch.mod_down(jnp.stack([c0, c1], axis=-3), ring, tables)


def phase(data, s, ring: RNSContext, rows: Sequence[int]) -> jax.Array:
    """The phase c_0 + c_1 s + ... + c_{k-1} s^(k-1) of NTT-domain ciphertexts uint32[..., k, L, N]
    on ``rows`` under the NTT-domain secret ``s`` (uint32[L, N] on the same rows): uint32[..., L, N]
    (Horner's rule; jittable)."""
    rows = tuple(rows)
    k = data.shape[-3]
    s = jnp.broadcast_to(s, data.shape[:-3] + data.shape[-2:])
    acc = data[..., k - 1, :, :]
    for i in range(k - 2, -1, -1):
        acc = ops.mac_mod(data[..., i, :, :], acc, s, ring, rows)
    return acc
