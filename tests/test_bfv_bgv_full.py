"""Full-size BFV and BGV (CAT's N = 2^15 reference point and the N = 2^14 set): slow, for the
GPU machine.

    pytest -m slow test_bfv_bgv_full.py

Each preset runs the depth chain of test_bfv.py / test_bgv.py to its maximum depth (exact
decryption against numpy, the measured noise budget above the analytic bound after every
operation, printed with -s), and one jitted circuit runs on the CPU and on the GPU with
identical bits (skipped without a GPU; the toy sets run without -m slow)."""
import jax
import numpy as np
import pytest

import jax_fhe
from jax_fhe import bfv, bgv
from jax_fhe.rns import HostRandom
from plainmod_helpers import rotate_slots, setup

SCHEMES = {"bfv": bfv, "bgv": bgv}


def _setup(scheme, name):
    return setup(SCHEMES[scheme], name, 15)


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["bfv", "bgv"])
@pytest.mark.parametrize("name", ["n14", "cat-n15"])
def test_full_size_depth(scheme, name, put, rng):
    mod = SCHEMES[scheme]
    ctx, keys = put(_setup(scheme, name))
    p = ctx.params
    t, n = p.plain_modulus, p.n
    model = mod.NoiseModel.for_key(ctx, keys.secret)
    evk = keys.evaluation
    a = rng.integers(0, t, n)
    x = mod.encrypt(mod.encode(a, ctx), ctx, keys.public, HostRandom.insecure_deterministic(1))
    e = model.fresh(public=True)
    level = getattr(x, "level", 0)
    step = jax.jit(lambda x, ctx, evk: mod.mul(x, mod.rotate_rows(x, 1, ctx, evk), ctx, evk))
    rows = []

    def check(what, ct, est):
        got = np.asarray(mod.decode(mod.decrypt(ct, ctx, keys.secret), ctx)).astype(np.int64)
        np.testing.assert_array_equal(got, a, err_msg=what)
        measured = float(mod.noise_budget(ct, ctx, keys.secret))
        bound = model.budget(est) if scheme == "bfv" else model.budget(est, ct.level)
        rows.append((what, measured, bound))
        assert measured >= bound, f"{what}: measured {measured:.2f} < bound {bound:.2f}"

    check("fresh", x, e)
    for d in range(1, p.max_depth + 1):
        x = step(x, ctx, evk)
        a = a * rotate_slots(a, 1, n) % t
        if scheme == "bfv":
            e = model.relin(model.mul(e, model.rotate(e)))
        else:
            e = model.relin(model.mul(e, model.rotate(e, level)), level)
        check(f"depth {d}", x, e)
        if scheme == "bgv" and level > 0:
            x, e, level = mod.mod_switch(x, ctx), model.mod_switch(e, level), level - 1
            check(f"depth {d} switched", x, e)
    for what, measured, bound in rows:
        print(f"{scheme} {name} {what:20s} measured {measured:8.2f}  bound {bound:8.2f}")


@pytest.mark.gpu
@pytest.mark.parametrize("scheme", ["bfv", "bgv"])
@pytest.mark.parametrize("name", ["toy-n10", "toy-n12", pytest.param("n14", marks=pytest.mark.slow),
                                  pytest.param("cat-n15", marks=pytest.mark.slow)])
def test_cpu_equals_gpu(scheme, name, rng):
    if not jax_fhe.gpu_available():
        pytest.skip("no CUDA device visible to JAX (or CUDA kernels not built)")
    mod = SCHEMES[scheme]
    ctx, keys = _setup(scheme, name)
    p = ctx.params
    a, b = rng.integers(0, p.plain_modulus, (2, p.n))
    x = mod.encrypt(mod.encode(a, ctx), ctx, keys.public, HostRandom.insecure_deterministic(2))
    y = mod.encrypt(mod.encode(b, ctx), ctx, keys.secret, HostRandom.insecure_deterministic(3))
    pb = mod.encode(b, ctx)

    def circuit(x, y, pb, ctx, evk, sk):
        u = mod.mul(mod.rotate_rows(x, 1, ctx, evk), y, ctx, evk)
        u = mod.add(mod.sub(u, mod.mul(x, pb, ctx), ctx), mod.square(y, ctx, evk), ctx)
        if scheme == "bgv":
            u = mod.mod_switch(u, ctx)
        u = mod.rotate_columns(u, ctx, evk)
        return u, mod.decrypt(u, ctx, sk), mod.encode(mod.decode(mod.decrypt(u, ctx, sk), ctx), ctx)

    outs = []
    for dev in jax.devices("cpu")[:1] + jax.devices("gpu")[:1]:
        args = jax.device_put((x, y, pb, ctx, keys.evaluation, keys.secret), dev)
        outs.append(jax.tree_util.tree_leaves(jax.jit(circuit)(*args)))
    for u, v in zip(*outs):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
