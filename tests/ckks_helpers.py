"""Helpers the CKKS and circuit tests share: encrypt / decrypt host values, assert a precision."""
from __future__ import annotations

from jax_fhe import ckks
from jax_fhe.rns import HostRandom


def encrypt_values(z, ctx, keys, seed, level=None):
    """Public-key encryption of host values ``z`` at ``level`` (INSECURE seeded randomness)."""
    return ckks.encrypt(ckks.encode(z, ctx, level=level), ctx, keys.public, HostRandom.insecure_deterministic(seed))


def decrypt_values(ct, ctx, keys):
    return ckks.decode(ckks.decrypt(ct, ctx, keys.secret), ctx)


def check_precision(want, got, mean, worst):
    """Assert at least ``mean`` bits of mean precision and ``worst`` bits in the worst slot."""
    prec = ckks.precision(want, got)
    assert prec.mean_bits >= mean and prec.min_bits >= worst, str(prec)
    return prec
