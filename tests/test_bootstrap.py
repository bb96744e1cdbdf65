"""CKKS bootstrapping end to end on the toy bootstrappable preset (INSECURE N = 2^12): a level-0
ciphertext comes back at level 4 holding the same message, within a stated precision, as one
jitted call; vmap gives the same bits as one by one; a second bootstrap after a multiplication
keeps the precision."""
from unittest import mock

import jax
import numpy as np
import pytest

from jax_fhe import ckks, circuits
from jax_fhe.rns import HostRandom


@pytest.fixture(scope="module")
def setup():
    params = ckks.toy_boot_n12()
    ctx = ckks.make_context(params)
    rng = HostRandom.insecure_deterministic(21)
    keys = ckks.keygen(ctx, rng)
    boots = {}
    for slots in (None, 64):
        boot = circuits.make_bootstrapper(ctx, circuits.BootstrapConfig(slots=slots))
        boots[boot.slots] = (boot, circuits.gen_bootstrap_keys(ctx, keys.secret, boot, rng))
    return ctx, keys, boots


def _message(n, seed):
    g = np.random.default_rng(seed)
    return g.uniform(-1, 1, n) + 1j * g.uniform(-1, 1, n)


def _run(setup, put, slots, z, seed):
    ctx, keys, boots = setup
    boot, bk = boots[slots]
    ct = ckks.encrypt(ckks.encode(z, ctx, level=0), ctx, keys.public, HostRandom.insecure_deterministic(seed))
    out = jax.jit(circuits.bootstrap)(put(ct), put(ctx), put(boot), put(bk))
    return out, ckks.decode(ckks.decrypt(out, ctx, keys.secret), ctx)


@pytest.mark.parametrize("slots, bound", [(2048, -19.5), (64, -21.0)])
def test_bootstrap_precision(setup, put, slots, bound):
    """Full slots: measured 2^-20.8 max (r = 7, sine-limited: the sine's own error on these
    inputs is 2^-20.8); 64 slots: 2^-22.5 (r = 10). Bounds are 1.3 / 1.5 bits looser."""
    ctx, _, boots = setup
    z = _message(slots, slots)
    out, got = _run(setup, put, slots, z, 1)
    assert out.level == boots[slots][0].output_level == 4
    assert out.scale == ctx.params.default_scale(4) and out.slots == slots
    err = np.abs(got - z)
    assert np.log2(err.max()) < bound, np.log2(err.max())


def test_vmap_equals_one_by_one(setup, put):
    ctx, keys, boots = setup
    boot, bk = boots[64]
    z = np.stack([_message(64, 5), _message(64, 6)])
    ct = ckks.encrypt(ckks.encode(z, ctx, level=0), ctx, keys.public, HostRandom.insecure_deterministic(7))
    ct, c, b, k = put(ct), put(ctx), put(boot), put(bk)
    both = jax.jit(jax.vmap(circuits.bootstrap, in_axes=(0, None, None, None)))(ct, c, b, k)
    one = jax.jit(circuits.bootstrap)
    for i in range(2):
        np.testing.assert_array_equal(np.asarray(both.data[i]), np.asarray(one(ct[i], c, b, k).data))


def test_slot_to_coeff_keys_cut_to_its_level(setup, put):
    """The rotation keys only StC uses hold its start level's digits and rows, and bootstrap
    with them to the same bits as with whole keys drawn from the same stream (StC in two
    levels: the toy set's default plans share every StC step with CtS)."""
    ctx, keys, _ = setup
    slots = 64
    boot = circuits.make_bootstrapper(ctx, circuits.BootstrapConfig(slots=slots, stc_levels=2))
    p = ctx.params
    cut = circuits.gen_bootstrap_keys(ctx, keys.secret, boot, HostRandom.insecure_deterministic(31))
    with mock.patch.object(ckks, "restrict_key", lambda key, c, level: key):
        whole = circuits.gen_bootstrap_keys(ctx, keys.secret, boot, HostRandom.insecure_deterministic(31))
    steps = boot.stc_only_steps()
    assert steps and set(steps) < set(cut.evk.rotations)
    stc_rows = tuple(sorted(set().union(*(p.rows(lv) for lv in range(boot.levels[2] + 1))) | set(p.special_rows)))
    assert len(stc_rows) < len(p.all_primes)
    for s, key in cut.evk.rotations.items():
        assert key.held_rows() == (stc_rows if s in steps else tuple(range(len(p.all_primes)))), s
        assert whole.evk.rotations[s].held_rows() == tuple(range(len(p.all_primes)))
    ct = ckks.encrypt(ckks.encode(_message(slots, 12), ctx, level=0), ctx, keys.public,
                      HostRandom.insecure_deterministic(13))
    f = jax.jit(circuits.bootstrap)
    np.testing.assert_array_equal(np.asarray(f(put(ct), put(ctx), put(boot), put(cut)).data),
                                  np.asarray(f(put(ct), put(ctx), put(boot), put(whole)).data))


def test_bootstrap_again_after_a_multiplication(setup, put):
    """Output fed back: square the refreshed message down to level 0, bootstrap again; each
    bootstrap's own error (output against the decryption of its input) stays within a bit."""
    ctx, keys, boots = setup
    boot, bk = boots[64]
    z = _message(64, 9) * 0.9
    out, got = _run(setup, put, 64, z, 10)
    first = np.log2(np.abs(got - z).max())
    sq = ckks.level_down(ckks.mul(out, out, ctx, bk.evk), ctx, 0, scale=ctx.params.default_scale(0))
    again = jax.jit(circuits.bootstrap)(put(sq), put(ctx), put(boot), put(bk))
    got2 = ckks.decode(ckks.decrypt(again, ctx, keys.secret), ctx)
    before = ckks.decode(ckks.decrypt(sq, ctx, keys.secret), ctx)
    second = np.log2(np.abs(got2 - before).max())
    assert second < first + 1.0, (first, second)
    assert np.log2(np.abs(got2 - z * z).max()) < -20


def test_bad_inputs(setup):
    ctx, keys, boots = setup
    boot, bk = boots[64]
    ct = ckks.encrypt(ckks.encode(_message(32, 1), ctx, level=0), ctx, keys.secret)
    with pytest.raises(ValueError, match="64 slots"):
        circuits.bootstrap(ct, ctx, boot, bk)
    with pytest.raises(TypeError, match="BootstrapKeys"):
        circuits.bootstrap(ct, ctx, boot, keys.evaluation)
    with pytest.raises(ValueError, match="slots must be a power of two"):
        circuits.make_bootstrapper(ctx, circuits.BootstrapConfig(slots=48))
    with pytest.raises(ValueError, match="levels"):
        circuits.make_bootstrapper(ctx, circuits.BootstrapConfig(stc_levels=9))
