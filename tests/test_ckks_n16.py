"""Full-size CKKS (the N = 2^16 bootstrappable set, 47 + 12 limbs, dnum 4): slow, for the GPU.

    pytest -m slow test_ckks_n16.py

Precision targets from issue #4: fresh encrypt/decrypt >= 30 bits, a chain of 10 ct x ct
multiplications >= 25 bits mean, inputs in [-1, 1]. Secret-key encryption noise at N = 2^16 is
3.2 sqrt(N/2) / 2^40 ~ 2^-30.8 per slot; public-key encryption (in QP, then ModDown) leaves the
rounding eps0 + eps1 s (h = 2^15, ~52 per coefficient) and sits near 2^-26.6, so the 30-bit
target applies to secret-key encryption (docs/ckks-parameters.md).
Measured values (CPU; ~40 s there) are in the comments; bounds are 1 bit (mean) / 2 bits (max)
below them, except the issue's 30-bit fresh-encryption target, asserted as is. Rotations sit
near 2^-26.8: the ModDown rounding u0 + u1 s with h = 2^15 (sqrt(h/12) ~ 52 per coefficient)."""
import jax
import numpy as np
import pytest

from jax_fhe import ckks
from jax_fhe.rns import HostRandom

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def n16():
    ctx = ckks.make_context(ckks.ckks_n16_boot())
    keys = ckks.keygen(ctx, HostRandom.insecure_deterministic(16), rotations=(1, 5))
    return ctx, keys


def _enc(z, ctx, keys, seed, secret=True):
    key = keys.secret if secret else keys.public
    return ckks.encrypt(ckks.encode(z, ctx), ctx, key, HostRandom.insecure_deterministic(seed))


def _dec(ct, ctx, keys):
    return ckks.decode(ckks.decrypt(ct, ctx, keys.secret), ctx)


def test_n16_fresh_encryption(n16, put, rng):
    ctx, keys = put(n16)
    z = rng.uniform(-1, 1, 1 << 15) + 1j * rng.uniform(-1, 1, 1 << 15)
    sk = ckks.precision(z, _dec(_enc(z, ctx, keys, 1), ctx, keys))
    assert sk.mean_bits >= 30.0 and sk.min_bits >= 26.6, str(sk)  # measured 30.5 / 28.6
    pk = ckks.precision(z, _dec(_enc(z, ctx, keys, 2, secret=False), ctx, keys))
    assert pk.mean_bits >= 25.6 and pk.min_bits >= 21.7, str(pk)  # measured 26.6 / 23.7


def test_n16_ten_multiplications(n16, put, rng):
    ctx, keys = put(n16)
    z = rng.uniform(-1, 1, (10, 1 << 15))
    cts = [_enc(z[i], ctx, keys, 10 + i) for i in range(10)]
    step = jax.jit(lambda a, b, ctx, evk: ckks.mul(a, b, ctx, evk))
    x, ref = cts[0], z[0]
    for i in range(1, 10):
        x, ref = step(x, cts[i] if i % 2 else x, ctx, keys.evaluation), ref * (z[i] if i % 2 else ref)
    x, ref = step(x, cts[1], ctx, keys.evaluation), ref * z[1]
    assert x.level == ctx.params.default_level - 10
    prec = ckks.precision(ref, _dec(x, ctx, keys).real)
    assert prec.mean_bits >= 26.0 and prec.min_bits >= 21.3, str(prec)  # measured 27.0 / 23.3


def test_n16_rotations(n16, put, rng):
    ctx, keys = put(n16)
    z = rng.uniform(-1, 1, 1 << 15)
    a = _enc(z, ctx, keys, 30)
    outs = ckks.rotate_hoisted(a, [1, 5], ctx, keys.evaluation)
    for s, o in zip([1, 5], outs):
        prec = ckks.precision(np.roll(z, -s), _dec(o, ctx, keys))
        assert prec.mean_bits >= 25.6 and prec.min_bits >= 21.5, str(prec)  # measured 26.6 / 23.5
