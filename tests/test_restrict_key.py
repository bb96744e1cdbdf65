"""Keys restricted to the levels they serve (ckks.restrict_key, rlwe.hybrid.restrict_key): the
same bits as the whole key at and below the level (rotation, hoisted rotations, relinearization,
the double-hoisted linear transform), a clear error above it, the memory they hold, and a round
trip through jax_fhe.io."""
import jax
import numpy as np
import pytest

from jax_fhe import ckks, io, rlwe
from jax_fhe.circuits import lintrans
from jax_fhe.rns import HostRandom

STEPS = (1, 5)


@pytest.fixture(scope="module")
def toy():
    ctx = ckks.make_context(ckks.toy_n12())
    keys = ckks.keygen(ctx, HostRandom.insecure_deterministic(3), rotations=STEPS)
    return ctx, keys


def _enc(ctx, keys, level, seed, slots=None):
    z = np.random.default_rng(seed).uniform(-1, 1, slots or ctx.params.slots)
    return ckks.encrypt(ckks.encode(z, ctx, level=level), ctx, keys.public, HostRandom.insecure_deterministic(seed))


def _restricted(ctx, evk, level):
    return ckks.EvalKeys(relin=ckks.restrict_key(evk.relin, ctx, level),
                         rotations={s: ckks.restrict_key(k, ctx, level) for s, k in evk.rotations.items()},
                         conjugation=None, params=ctx.params)


def test_shape_and_memory(toy):
    ctx, keys = toy
    p = ctx.params
    full = keys.evaluation.rotations[1]
    for level in (p.max_level, 3, 2, 1):
        key = ckks.restrict_key(full, ctx, level)
        # every level up to this one (toy-n12's levels, as n16-boot's, do not nest their primes)
        rows = sorted(set().union(*(p.rows(lv) for lv in range(level + 1))))
        digits = max(r // p.alpha for r in rows) + 1
        assert key.held_rows() == tuple(sorted(set(rows) | set(p.special_rows)))
        assert key.data.shape == (digits, 2, len(rows) + p.alpha, p.n)
        held = key.held_rows()
        np.testing.assert_array_equal(np.asarray(key.data),
                                      np.asarray(full.data)[:digits][:, :, list(held)])
        assert ckks.restrict_key(key, ctx, level) is key              # nothing more to cut
    assert full.rows is None and full.held_rows() == tuple(range(len(p.all_primes)))
    assert "restricted" in repr(ckks.restrict_key(full, ctx, 1))


def test_levels_do_not_nest():
    """Why a key serving level l holds the rows of every level below: toy-n12's level 2 uses
    primes its level 3 does not."""
    p = ckks.toy_n12()
    assert not set(p.rows(2)) <= set(p.rows(3))


@pytest.mark.parametrize("level", [3, 2, 1])
def test_same_bits_at_and_below_the_level(toy, put, level):
    ctx, keys = toy
    evk = keys.evaluation
    cut = _restricted(ctx, evk, 3)
    ctx, evk, cut = put(ctx), put(evk), put(cut)
    ct = put(_enc(ctx, keys, level, 7))
    f = jax.jit(lambda c, k: (ckks.rotate(c, 1, ctx, k), ckks.rotate_hoisted(c, STEPS, ctx, k),
                              ckks.mul(c, c, ctx, k)))
    for a, b in zip(jax.tree_util.tree_leaves(f(ct, evk)), jax.tree_util.tree_leaves(f(ct, cut))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_linear_transform_same_bits(toy, put):
    """The double-hoisted transform (key products left in the extended basis) with restricted keys."""
    ctx, keys = toy
    rng = np.random.default_rng(5)
    n = 16
    diags = {k: rng.uniform(-1, 1, n) for k in (0, 1, 5, 6)}
    lt = lintrans.make_linear_transform(diags, ctx, 3, baby=4)
    steps = lintrans.rotation_steps(lt)
    evk = ckks.keygen(ctx, HostRandom.insecure_deterministic(3), rotations=steps).evaluation
    cut = _restricted(ctx, evk, 3)
    ct = put(_enc(ctx, keys, 3, 8, slots=n))
    a = lintrans.linear_transform(ct, put(lt), put(ctx), put(evk))
    b = lintrans.linear_transform(ct, put(lt), put(ctx), put(cut))
    np.testing.assert_array_equal(np.asarray(a.data), np.asarray(b.data))


def test_refused_above_the_level(toy):
    ctx, keys = toy
    cut = _restricted(ctx, keys.evaluation, 2)
    ct = _enc(ctx, keys, 4, 9)
    with pytest.raises(ValueError, match="restrict"):
        ckks.rotate(ct, 1, ctx, cut)
    with pytest.raises(ValueError, match="restrict"):
        ckks.mul(ct, ct, ctx, cut)
    low = ckks.restrict_key(keys.evaluation.rotations[1], ctx, 1)
    with pytest.raises(ValueError, match="lacks"):   # restricting again, higher, cannot add rows
        ckks.restrict_key(low, ctx, 4)
    with pytest.raises(TypeError, match="KeySwitchKey"):
        rlwe.restrict_key(np.zeros(3), ctx.keyswitch_tables(1))


def test_io_round_trip(toy):
    ctx, keys = toy
    cut = _restricted(ctx, keys.evaluation, 3)
    back = io.loads(io.dumps(cut))
    assert back.rotations[1].rows == cut.rotations[1].rows
    ct = _enc(ctx, keys, 3, 10)
    np.testing.assert_array_equal(np.asarray(ckks.rotate(ct, 5, ctx, back).data),
                                  np.asarray(ckks.rotate(ct, 5, ctx, cut).data))


def test_other_methods_unchanged():
    ctx = ckks.make_context(ckks.toy_n12_klss())
    key = ckks.keygen(ctx, HostRandom.insecure_deterministic(4)).evaluation.relin
    assert ckks.restrict_key(key, ctx, 1) is key
