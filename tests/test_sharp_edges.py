"""What a user runs into first, each with a clear answer: constants and rotation steps under
jax.jit, an unrescaled product at level 0, indexing a ciphertext batch, a float ring degree."""
import functools

import jax
import numpy as np
import pytest

from jax_fhe import ckks, rns
from jax_fhe.rns import HostRandom


@pytest.fixture(scope="module")
def toy():
    ctx = ckks.make_context(ckks.toy_n12())
    keys = ckks.keygen(ctx, HostRandom.insecure_deterministic(5), rotations=[1])
    return ctx, keys


def _enc(z, ctx, keys, seed, level=None):
    return ckks.encrypt(ckks.encode(z, ctx, level=level), ctx, keys.public, HostRandom.insecure_deterministic(seed))


def test_jitted_constant_must_be_static(toy):
    ctx, keys = toy
    z = np.linspace(-1, 1, 8)
    ct = _enc(z, ctx, keys, 1)
    with pytest.raises(TypeError, match="static"):
        jax.jit(ckks.mul)(ct, 0.5, ctx, keys.evaluation)
    with pytest.raises(TypeError, match="static"):
        jax.jit(ckks.add)(ct, 0.5, ctx)
    with pytest.raises(TypeError, match="static"):
        jax.jit(ckks.sub)(ct, 0.5, ctx)
    # the documented ways work and agree with eager
    f = jax.jit(ckks.mul, static_argnums=1)
    g = jax.jit(functools.partial(ckks.mul, b=0.5))
    want = ckks.decode(ckks.decrypt(ckks.mul(ct, 0.5, ctx), ctx, keys.secret), ctx, real=True)
    for h in (lambda: f(ct, 0.5, ctx), lambda: g(ct, ctx=ctx)):
        got = ckks.decode(ckks.decrypt(h(), ctx, keys.secret), ctx, real=True)
        np.testing.assert_array_equal(got, want)
    assert np.max(np.abs(want - 0.5 * z)) < 2.0**-20


def test_jitted_rotation_step_must_be_static(toy):
    ctx, keys = toy
    z = np.arange(8) / 8
    ct = _enc(z, ctx, keys, 2)
    with pytest.raises(TypeError, match="static"):
        jax.jit(ckks.rotate)(ct, 1, ctx, keys.evaluation)
    out = jax.jit(ckks.rotate, static_argnums=1)(ct, 1, ctx, keys.evaluation)
    got = ckks.decode(ckks.decrypt(out, ctx, keys.secret), ctx, real=True)
    assert np.max(np.abs(got - np.roll(z, -1))) < 2.0**-20


def test_unrescaled_product_that_cannot_fit_raises(toy):
    ctx, keys = toy
    z = np.full(8, 0.5)
    ct = _enc(z, ctx, keys, 3, level=0)
    with pytest.raises(ValueError, match="does not fit level 0"):
        ckks.mul(ct, ct, ctx, keys.evaluation, rescale=False)
    with pytest.raises(ValueError, match="level 0"):
        ckks.mul(ct, ct, ctx, keys.evaluation)  # rescale from level 0 is impossible too
    # where the product fits, rescale=False stays allowed (and decrypts right after a rescale)
    hi = _enc(z, ctx, keys, 4)
    prod = ckks.mul(hi, hi, ctx, keys.evaluation, rescale=False)
    got = ckks.decode(ckks.decrypt(ckks.rescale(prod, ctx), ctx, keys.secret), ctx, real=True)
    assert np.max(np.abs(got - 0.25)) < 2.0**-20


def test_ciphertext_batch_indexing(toy):
    ctx, keys = toy
    z = np.random.default_rng(0).uniform(-1, 1, (3, 2, 8))
    ct = _enc(z, ctx, keys, 5)
    assert ct.batch_shape == (3, 2) and len(ct) == 3
    for idx, want in (((1,), z[1]), ((2, 0), z[2, 0]), ((slice(0, 2),), z[:2])):
        sub = ct[idx]
        np.testing.assert_array_equal(np.asarray(sub.data), np.asarray(ct.data)[idx])
        assert (sub.level, sub.scale, sub.slots) == (ct.level, ct.scale, ct.slots)
        got = ckks.decode(ckks.decrypt(sub, ctx, keys.secret), ctx, real=True)
        assert np.max(np.abs(got - want)) < 2.0**-20
    with pytest.raises(IndexError, match="batch"):
        ct[0, 0, 0]
    with pytest.raises(IndexError):
        ct[..., 0]
    with pytest.raises(TypeError, match="not iterable"):
        list(ct)


def test_degree_two_ciphertexts(toy):
    """mul(..., relinearize=False) keeps three polynomials: added and decrypted as they are,
    relinearized later, with the same result."""
    ctx, keys = toy
    rng = np.random.default_rng(1)
    z, w = rng.uniform(-1, 1, (2, 16))
    a, b = _enc(z, ctx, keys, 6), _enc(w, ctx, keys, 7)
    lazy = ckks.mul(a, b, ctx, relinearize=False)
    assert lazy.size == 3 and lazy.degree == 2
    total = ckks.add(lazy, ckks.mul(b, b, ctx, relinearize=False), ctx)
    want = z * w + w * w
    for ct in (total, ckks.relinearize(total, ctx, keys.evaluation)):
        got = ckks.decode(ckks.decrypt(ct, ctx, keys.secret), ctx, real=True)
        assert np.max(np.abs(got - want)) < 2.0**-18
    with pytest.raises(ValueError, match="relinearize"):
        ckks.rotate(lazy, 1, ctx, keys.evaluation)
    with pytest.raises(ValueError, match="degree-1"):
        ckks.mul(lazy, a, ctx, keys.evaluation)


def test_ring_degree_must_be_an_int():
    primes = rns.ntt_primes(30, 2, 1024)
    with pytest.raises(TypeError, match="must be an int"):
        rns.make_context(primes, 1024.0)
    with pytest.raises(ValueError, match="power of two"):
        rns.make_context(primes, 1000)
    assert rns.make_context(primes, np.int64(1024)).n == 1024
