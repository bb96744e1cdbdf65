"""What the BFV and BGV tests share: keys on the toy sets, slot references (both schemes batch
N slots mod t as a 2 x N/2 matrix) and the noise-budget tracker."""
import numpy as np
import pytest

from jax_fhe.rns import HostRandom


def setup(mod, name: str, seed: int, steps=(1,)):
    """(context, keys) of scheme module ``mod`` (bfv or bgv) on preset ``name``, with rotation
    keys for ``steps`` and the column swap."""
    ctx = mod.make_context(mod.preset(name))
    return ctx, mod.keygen(ctx, HostRandom.insecure_deterministic(seed), rotations=steps, columns=True)


def toy_fixtures(mod, steps):
    """The fixtures toy12 and toy10 (module-scoped setups of the toy presets) and env (toy12 on
    the test's device): assign them to names in the test module."""
    @pytest.fixture(scope="module")
    def toy12():
        return setup(mod, "toy-n12", 12, steps)

    @pytest.fixture(scope="module")
    def toy10():
        return setup(mod, "toy-n10", 10, steps)

    @pytest.fixture
    def env(toy12, put):
        return put(toy12)

    return toy12, toy10, env


def random_slots(rng, p, shape=()):
    """Uniform slot values mod t: int64[*shape, N]."""
    return rng.integers(0, p.plain_modulus, shape + (p.n,), dtype=np.int64)


def decrypt_slots(mod, ct, ctx, keys):
    return np.asarray(mod.decode(mod.decrypt(ct, ctx, keys.secret), ctx)).astype(np.int64)


def rotate_slots(v, k, n):
    """Slot reference: both rows of the 2 x N/2 matrix rotated left by k."""
    return np.roll(v.reshape(v.shape[:-1] + (2, n // 2)), -k, axis=-1).reshape(v.shape)


def swap_rows(v, n):
    """Slot reference of the column rotation: the two rows swapped."""
    return v.reshape(v.shape[:-1] + (2, n // 2))[..., ::-1, :].reshape(v.shape)


class Tracker:
    """Checks every ciphertext's decryption and its measured budget against the analytic bound
    (BGV's at the ciphertext's level) and records (what, level or None, measured, bound)."""

    def __init__(self, mod, ctx, keys):
        self.mod, self.ctx, self.keys = mod, ctx, keys
        self.model = mod.NoiseModel.for_key(ctx, keys.secret)
        self.rows = []

    def check(self, what, ct, est, want, *, gap=None):
        got = decrypt_slots(self.mod, ct, self.ctx, self.keys)
        np.testing.assert_array_equal(got, want % self.ctx.params.plain_modulus, err_msg=what)
        measured = np.min(self.mod.noise_budget(ct, self.ctx, self.keys.secret))
        level = getattr(ct, "level", None)
        bound = self.model.budget(est) if level is None else self.model.budget(est, level)
        self.rows.append((what, level, float(measured), bound))
        assert measured >= bound, f"{what}: measured budget {measured:.2f} below the bound's {bound:.2f}"
        if gap is not None:
            assert measured - bound <= gap, f"{what}: the bound is {measured - bound:.2f} bits loose"
        return measured
