"""ModRaise and secret switching (the scheme operations bootstrapping needs), on CPU against
exact integers: the raised phase is the low phase plus q times a small integer polynomial."""

import jax
import numpy as np
import pytest

from jax_fhe import ckks, ops, rlwe, rns
from jax_fhe.rns import HostRandom


@pytest.fixture(scope="module")
def toy():
    params = ckks.toy_n12()
    ctx = ckks.make_context(params)
    keys = ckks.keygen(ctx, HostRandom.insecure_deterministic(11))
    return ctx, keys


def _phase_ints(ct, ctx, sk):
    p = ctx.params
    pt = ckks.decrypt(ct, ctx, sk)
    res = np.asarray(ops.intt(pt.data, ctx.ring, p.rows(pt.level)))
    return rns.crt_centered(res, p.primes(pt.level))


@pytest.mark.parametrize("high", [None, 3])
def test_mod_raise_adds_multiples_of_q(toy, high):
    ctx, keys = toy
    p = ctx.params
    z = np.random.default_rng(3).uniform(-1, 1, 64)
    ct = ckks.encrypt(ckks.encode(z, ctx, level=0), ctx, keys.secret, HostRandom.insecure_deterministic(4))
    tables = ckks.make_mod_raise_tables(p, 0, high)
    raised = jax.jit(ckks.mod_raise)(ct, ctx, tables)
    assert raised.level == (p.max_level if high is None else high) and raised.scale == ct.scale
    low, up = _phase_ints(ct, ctx, keys.secret), _phase_ints(raised, ctx, keys.secret)
    q0 = p.modulus(0)
    diff = up - low
    assert all(int(d) % q0 == 0 for d in diff)
    overflow = np.array([int(d) // q0 for d in diff])
    s_l1 = p.n if p.hamming_weight is None else p.hamming_weight   # ||s||_1 <= N (ternary)
    assert np.max(np.abs(overflow)) <= (1 + s_l1) / 2
    assert np.max(np.abs(overflow)) >= 1       # a dense secret: the overflow is not all zero
    # batched: the same bits as one by one
    two = ckks.encrypt(ckks.encode(np.stack([z, -z]), ctx, level=0), ctx, keys.secret,
                       HostRandom.insecure_deterministic(5))
    both = ckks.mod_raise(two, ctx, tables)
    np.testing.assert_array_equal(np.asarray(both[1].data), np.asarray(ckks.mod_raise(two[1], ctx, tables).data))


def test_mod_raise_rejects_wrong_level(toy):
    ctx, keys = toy
    ct = ckks.encrypt(ckks.encode(np.ones(8), ctx, level=1), ctx, keys.secret, HostRandom.insecure_deterministic(6))
    with pytest.raises(ValueError, match="raise from level 0"):
        ckks.mod_raise(ct, ctx, ckks.make_mod_raise_tables(ctx.params))


def test_switch_to_sparse_secret_with_a_small_modulus_key(toy):
    """Dense -> sparse at level 0 with a key over the level's primes and two special primes
    (P ~ 2^62 > q0 ~ 2^50, so the switch adds ~ q0 sigma sqrt(N) / P; zero elsewhere), then
    sparse -> dense at the top level with an ordinary key."""
    ctx, keys = toy
    p = ctx.params
    rng = HostRandom.insecure_deterministic(7)
    sparse = rlwe.secret_ntt(rlwe.sample_secret(p.n, rng, hamming_weight=16), ctx.ring)
    small = rlwe.keyswitch.make_tables("hybrid", p.all_primes, p.rows(0), p.special_rows[:2], p.alpha)
    to_sparse = ckks.gen_switching_key(ctx, keys.secret.s, sparse, rng, tables=small)
    used = set(p.rows(0)) | set(p.special_rows[:2])
    data = np.asarray(to_sparse.data)
    assert not data[:, :, [r for r in range(len(p.all_primes)) if r not in used]].any()
    z = np.random.default_rng(8).uniform(-1, 1, 32)
    ct = ckks.encrypt(ckks.encode(z, ctx, level=0), ctx, keys.public, rng)
    moved = ckks.switch_key(ct, to_sparse, ctx, small)
    sk_sparse = ckks.SecretKey(s=sparse, params=p)
    got = ckks.decode(ckks.decrypt(moved, ctx, sk_sparse), ctx, real=True)
    assert np.max(np.abs(got - z)) < 2.0**-16
    back = ckks.gen_switching_key(ctx, sparse, keys.secret.s, rng)
    top = ckks.encrypt(ckks.encode(z, ctx), ctx, sk_sparse, rng)
    dense = ckks.switch_key(top, back, ctx)
    got = ckks.decode(ckks.decrypt(dense, ctx, keys.secret), ctx, real=True)
    assert np.max(np.abs(got - z)) < 2.0**-20
    with pytest.raises(ValueError, match="rows"):
        ckks.switch_key(top, to_sparse, ctx, small)
