"""Encryption (public or secret key) and decryption.

Encryption draws a 256-bit key on the host (HostRandom) and samples its noise on the device; with
``rng`` a device key (uint32[8], a fresh one per call) it is jittable.
Public-key encryption works in QP (the level's primes and the special primes P) and divides by P
(ModDown): (v b + e0 + P m, v a + e1) / P. The noise v e + e0 + e1 s of a dense ternary v is
divided by P and vanishes; what remains is ModDown's rounding, eps0 + eps1 s with |eps| <= 1/2
(std ~ sqrt(h / 12), 52 at h = 2^15), against e (sigma = 3.2) for secret-key encryption
(-a s + e + m, a). Without the P detour the noise was ~2^9.9, about 8 bits of precision lost at
N = 2^16 instead of ~4 (docs/ckks-parameters.md).
"""
from __future__ import annotations

from ..ops import take_static
from ..rlwe import encryption as rlwe_enc
from ..rns.sampling import record_uniform_seed
from .context import CKKSContext, check_context
from .keys import PublicKey, SecretKey
from .types import Ciphertext, Plaintext, check_data


def encrypt(pt: Plaintext, ctx: CKKSContext, key, rng=None, *, seed_a: bool = False) -> Ciphertext:
    """Encrypt a plaintext (any batch shape) under a :class:`PublicKey` or a
    :class:`SecretKey`. ``rng``: HostRandom (None: os.urandom), or a device key uint32[8]
    (``HostRandom().device_key()``, a fresh one per call; jittable then). ``seed_a`` (secret-key
    encryption only): draw the uniform "a" component from a fresh public seed recorded on the
    ciphertext, so that :mod:`jax_fhe.io` stores it in half the size."""
    ctx = check_context(ctx, "encrypt")
    if not isinstance(pt, Plaintext):
        raise TypeError(f"encrypt: expected a Plaintext, got {type(pt).__name__}")
    p = ctx.params
    if pt.params != p or getattr(key, "params", None) != p:
        raise ValueError(f"encrypt: plaintext ({pt.params.name!r}), key and context ({p.name!r}) "
                         "must use the same parameter set")
    check_data(pt.data, p, pt.level, (), "encrypt")
    rows = p.rows(pt.level)
    a_seed = None
    if isinstance(key, PublicKey):
        if seed_a:
            raise ValueError("encrypt: seed_a applies to secret-key encryption only (a public-key "
                             "encryption's components are not uniform from a seed)")
        data = rlwe_enc.encrypt_pk(pt.data, key.data, ctx.ring, rows, rng, p.sigma,
                                   tables=ctx.keyswitch_tables(pt.level))
    elif isinstance(key, SecretKey):
        s = take_static(key.s, rows, -2, max_runs=1)
        a_seed = rlwe_enc.new_seed(rng, seed_a)
        data = rlwe_enc.encrypt_sk(pt.data, s, ctx.ring, rows, rng, p.sigma, a_seed=a_seed)
    else:
        raise TypeError(f"encrypt: key must be a PublicKey or SecretKey, got {type(key).__name__}")
    ct = Ciphertext(data=data, level=pt.level, scale=pt.scale, slots=pt.slots, params=p)
    if a_seed is not None:
        record_uniform_seed(ct, rlwe_enc.seed_record(a_seed, ctx.ring, rows, tuple(pt.data.shape[:-2])))
    return ct


def decrypt(ct: Ciphertext, ctx: CKKSContext, sk: SecretKey) -> Plaintext:
    """The phase c0 + c1 s (+ c2 s^2 for a degree-2 ciphertext): the plaintext (jittable)."""
    ctx = check_context(ctx, "decrypt")
    if not isinstance(ct, Ciphertext):
        raise TypeError(f"decrypt: expected a Ciphertext, got {type(ct).__name__}")
    if not isinstance(sk, SecretKey):
        raise TypeError(f"decrypt: expected a SecretKey, got {type(sk).__name__}")
    p = ctx.params
    if ct.params != p or sk.params != p:
        raise ValueError(f"decrypt: ciphertext ({ct.params.name!r}), key ({sk.params.name!r}) and "
                         f"context ({p.name!r}) must use the same parameter set")
    check_data(ct.data, p, ct.level, (None,), "decrypt")
    rows = p.rows(ct.level)
    m = rlwe_enc.phase(ct.data, take_static(sk.s, rows, -2, max_runs=1), ctx.ring, rows)
    return Plaintext(data=m, level=ct.level, scale=ct.scale, slots=ct.slots, params=p)
