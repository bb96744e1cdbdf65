"""BGV end to end on the insecure test sets: every operation decrypts exactly to numpy integer
arithmetic mod t (slot-wise), through each toy preset's maximum depth (a modulus switch after
every product); the measured noise budget after every operation is at least what the analytic
bound guarantees (bgv.NoiseModel.for_key), and for single operations within 4 bits of it;
levels and factors; jit == eager; vmap == loop; bad inputs raise."""
import jax
import numpy as np
import pytest

from jax_fhe import bfv, bgv
from jax_fhe.rns import HostRandom
from plainmod_helpers import Tracker, decrypt_slots, random_slots, rotate_slots, swap_rows, toy_fixtures

STEPS = (1, 3, -1)


toy12, toy10, env = toy_fixtures(bgv, STEPS)


def _enc(values, ctx, keys, seed, secret=False, level=None):
    key = keys.secret if secret else keys.public
    return bgv.encrypt(bgv.encode(values, ctx), ctx, key, HostRandom.insecure_deterministic(seed), level=level)


def _dec(ct, ctx, keys):
    return decrypt_slots(bgv, ct, ctx, keys)


# -- parameters ----------------------------------------------------------------------------------

def test_presets():
    cat, n14, toy = bgv.preset("cat-n15"), bgv.preset("n14"), bgv.preset("toy-n12")
    assert cat.n == 1 << 15 and cat.plain_modulus == 786433 and cat.log_pq <= 881 and not cat.insecure
    assert n14.log_pq <= 438 and not n14.insecure and toy.insecure and "INSECURE" in repr(toy)
    assert cat.q_primes == bfv.preset("cat-n15").q_primes           # the BFV set's primes
    for p in (cat, n14, toy, bgv.preset("toy-n10")):
        for l in range(1, p.max_level + 1):
            assert not p.added(l) and p.dropped(l)
    assert [len(cat.dropped(l)) for l in range(1, 12)] == [2] * 11
    assert (cat.max_depth, n14.max_depth, toy.max_depth, bgv.preset("toy-n10").max_depth) == (11, 5, 5, 9)
    with pytest.raises(ValueError, match="unknown BGV preset"):
        bgv.preset("nope")


def test_bad_parameters():
    p = bgv.preset("toy-n12")
    kw = dict(log_n=p.log_n, q_primes=p.q_primes, p_primes=p.p_primes, alpha=p.alpha, insecure=True)
    with pytest.raises(ValueError, match="nested"):
        bgv.BGVParams(levels=((0, 1), (0, 2, 3)), plain_modulus=65537, **kw)
    with pytest.raises(ValueError, match="1 \\(mod 2N"):
        bgv.BGVParams(levels=p.levels, plain_modulus=65539, **kw)
    with pytest.raises(ValueError, match="odd prime"):
        bgv.BGVParams(levels=p.levels, plain_modulus=1, **kw)


def test_balance_factors():
    t = 65537
    for f1, f2 in [(1, 1), (3, 7), (12345, 54321), (1, t - 1), (2, 32769)]:
        a, b = bgv.balance_factors(f1, f2, t)
        assert (a * f1 - b * f2) % t == 0 and a != 0 and b != 0
        assert max(abs(a), abs(b)) ** 2 <= t


# -- every operation -----------------------------------------------------------------------------

def test_every_operation(env, rng):
    ctx, keys = env
    p = ctx.params
    t, n, top = p.plain_modulus, p.n, p.max_level
    tr = Tracker(bgv, ctx, keys)
    m = tr.model
    a, b, c = random_slots(rng, p), random_slots(rng, p), random_slots(rng, p)
    x, y = _enc(a, ctx, keys, 1), _enc(b, ctx, keys, 2, secret=True)
    assert x.level == top and x.factor == 1
    ex, ey = m.fresh(public=True), m.fresh(public=False)
    tr.check("encrypt (public key)", x, ex, a, gap=4)
    tr.check("encrypt (secret key)", y, ey, b, gap=4)
    evk = keys.evaluation
    pc = bgv.encode(c, ctx)
    tr.check("add", bgv.add(x, y, ctx), m.add(ex, ey), a + b, gap=4)
    tr.check("sub", bgv.sub(x, y, ctx), m.add(ex, ey), a - b, gap=4)
    tr.check("neg", bgv.neg(x, ctx), ex, -a, gap=4)
    tr.check("add plaintext", bgv.add(x, pc, ctx), m.add_plain(ex), a + c, gap=4)
    tr.check("plaintext - ct", bgv.sub(pc, x, ctx), m.add_plain(ex), c - a, gap=4)
    tr.check("add int", bgv.add(x, 11, ctx), m.add_plain(ex), a + 11, gap=4)
    tr.check("mul plaintext", bgv.mul(x, pc, ctx), m.mul_plain(ex, bfv.plain_norm2(pc.data, t)), a * c, gap=4)
    tr.check("mul int", bgv.mul(x, 5, ctx), m.mul_const(ex, 5), 5 * a, gap=4)
    exy = m.relin(m.mul(ex, ey), top)
    xy = bgv.mul(x, y, ctx, evk)
    tr.check("mul (relinearized)", xy, exy, a * b, gap=4)
    d2 = bgv.mul(x, y, ctx, relinearize=False)
    tr.check("mul (degree 2)", d2, m.mul(ex, ey), a * b, gap=4)
    tr.check("relinearize", bgv.relinearize(d2, ctx, evk), exy, a * b, gap=4)
    tr.check("square", bgv.square(x, ctx, evk), m.relin(m.mul(ex, ex), top), a * a, gap=4)
    sw = bgv.mod_switch(xy, ctx)
    esw = m.mod_switch(exy, top)
    assert sw.level == top - 1 and sw.factor == pow(p.q_primes[top], -1, t)
    tr.check("mod switch", sw, esw, a * b, gap=4)
    tr.check("mod switch (degree 2)", bgv.mod_switch(d2, ctx), m.mod_switch(m.mul(ex, ey), top, degree=2), a * b,
             gap=4)
    # operands at different levels and factors: the higher one is switched down, factors balanced
    mixed = bgv.add(sw, x, ctx)                      # x switched down: the same factor as sw
    assert mixed.level == top - 1 and mixed.factor == sw.factor
    tr.check("add across levels", mixed, m.add(esw, m.mod_switch(ex, top)), a * b + a, gap=4)
    fresh = _enc(c, ctx, keys, 4, level=top - 1)    # factor 1 against sw's: balanced
    fa, fb = bgv.balance_factors(sw.factor, 1, t)
    mixed = bgv.add(sw, fresh, ctx)
    assert mixed.factor == sw.factor * fa % t and max(abs(fa), abs(fb)) ** 2 <= t
    tr.check("add across factors", mixed, m.add(m.mul_const(esw, fa), m.mul_const(m.fresh(), fb)), a * b + c,
             gap=4)
    tr.check("add plaintext (factor)", bgv.add(sw, pc, ctx), m.add_plain(esw), a * b + c, gap=4)
    tr.check("mul across levels", bgv.mul(sw, x, ctx, evk),
             m.relin(m.mul(esw, m.mod_switch(ex, top)), top - 1), a * a * b, gap=4)
    for k in STEPS + (0,):
        tr.check(f"rotate rows {k}", bgv.rotate_rows(x, k, ctx, evk), m.rotate(ex, top) if k else ex, rotate_slots(a, k, n),
                 gap=4)
    tr.check("rotate columns", bgv.rotate_columns(x, ctx, evk), m.rotate(ex, top), swap_rows(a, n), gap=4)
    tr.check("rotate at level 3", bgv.rotate_rows(bgv.mod_switch_to(x, 3, ctx), 1, ctx, evk),
             m.rotate(m.mod_switch(m.mod_switch(ex, 5), 4), 3), rotate_slots(a, 1, n), gap=4)
    low = _enc(b, ctx, keys, 3, level=0)
    assert low.data.shape[-2] == 1
    tr.check("encrypt at level 0", low, m.fresh(public=True), b, gap=4)
    for what, level, measured, bound in tr.rows:
        print(f"{what:24s} level {level}  measured {measured:7.2f}  bound {bound:7.2f}")


def test_mul_operand(env, rng):
    """mul with a MulOperand prepared at the ciphertext's level gives the same bits as with the
    Plaintext (also under jit, and below the top level); one prepared for another level is
    refused with the level to use."""
    ctx, keys = env
    p = ctx.params
    top = p.max_level
    a, c = random_slots(rng, p), random_slots(rng, p)
    pc = bgv.encode(c, ctx)
    for level in (top, top - 1):
        x = _enc(a, ctx, keys, 3, level=level)
        op = jax.jit(bgv.mul_operand, static_argnums=2)(pc, ctx, level)
        assert op.level == level and op.data.shape == (len(p.rows(level)), p.n)
        want = bgv.mul(x, pc, ctx)
        np.testing.assert_array_equal(np.asarray(jax.jit(bgv.mul)(x, op, ctx).data), np.asarray(want.data))
        assert np.array_equal(_dec(bgv.mul(x, op, ctx), ctx, keys), a * c % p.plain_modulus)
    with pytest.raises(ValueError, match=f"level={top - 1}"):
        bgv.mul(x, bgv.mul_operand(pc, ctx), ctx)
    with pytest.raises(TypeError, match="MulOperand"):
        bgv.sub(x, op, ctx)


@pytest.mark.parametrize("name", ["toy-n12", "toy-n10"])
def test_depth(name, toy12, toy10, put, rng):
    """x <- switch(relin(x * rotate(x, 1))) + c to the preset's maximum depth: exact decryption
    and the measured budget above the bound after every operation."""
    ctx, keys = put(toy12 if name == "toy-n12" else toy10)
    p = ctx.params
    t, n = p.plain_modulus, p.n
    tr = Tracker(bgv, ctx, keys)
    m = tr.model
    a = random_slots(rng, p)
    x, e, level = _enc(a, ctx, keys, 4), m.fresh(public=True), p.max_level
    evk = keys.evaluation
    for d in range(1, p.max_depth + 1):
        r = bgv.rotate_rows(x, 1, ctx, evk)
        er = m.rotate(e, level)
        tr.check(f"depth {d - 1} rotate", r, er, rotate_slots(a, 1, n))
        x = bgv.mul(x, r, ctx, evk)
        e = m.relin(m.mul(e, er), level)
        a = a * rotate_slots(a, 1, n) % t
        tr.check(f"depth {d} mul", x, e, a)
        if level > 0:
            x, e, level = bgv.mod_switch(x, ctx), m.mod_switch(e, level), level - 1
            tr.check(f"depth {d} mod switch", x, e, a)
        c = random_slots(rng, p)
        x, e, a = bgv.add(x, bgv.encode(c, ctx), ctx), m.add_plain(e), (a + c) % t
        left = tr.check(f"depth {d} add plaintext", x, e, a)
    assert left > 0
    for what, level, measured, bound in tr.rows:
        print(f"{name} {what:26s} level {level:2d}  measured {measured:7.2f}  bound {bound:7.2f}")


# -- jit, vmap -----------------------------------------------------------------------------------

def test_jit_equals_eager(env, rng):
    ctx, keys = env
    p = ctx.params
    a, b, c = random_slots(rng, p), random_slots(rng, p), random_slots(rng, p)
    x, y = _enc(a, ctx, keys, 5), _enc(b, ctx, keys, 6, level=4)
    pc = bgv.encode(c, ctx)

    def circuit(x, y, pc, ctx, evk):
        u = bgv.mod_switch(bgv.mul(bgv.rotate_rows(x, 3, ctx, evk), y, ctx, evk), ctx)
        u = bgv.sub(bgv.add(u, pc, ctx), bgv.mul(x, pc, ctx), ctx)
        return bgv.rotate_columns(bgv.square(u, ctx, evk), ctx, evk)

    eager = circuit(x, y, pc, ctx, keys.evaluation)
    jitted = jax.jit(circuit)(x, y, pc, ctx, keys.evaluation)
    assert (jitted.level, jitted.factor) == (eager.level, eager.factor) and eager.level == 3
    np.testing.assert_array_equal(np.asarray(jitted.data), np.asarray(eager.data))
    t, n = p.plain_modulus, p.n
    want = swap_rows(((rotate_slots(a, 3, n) * b + c - a * c) % t) ** 2, n)
    np.testing.assert_array_equal(_dec(jitted, ctx, keys), want % t)
    dec = jax.jit(bgv.decrypt)(jitted, ctx, keys.secret)
    np.testing.assert_array_equal(np.asarray(dec.data), np.asarray(bgv.decrypt(eager, ctx, keys.secret).data))


def test_vmap_equals_loop(env, rng):
    ctx, keys = env
    p = ctx.params
    a, b = random_slots(rng, p, (3,)), random_slots(rng, p)
    xs, y = _enc(a, ctx, keys, 7), _enc(b, ctx, keys, 8)

    def f(x):
        return bgv.mod_switch(bgv.rotate_rows(bgv.mul(x, y, ctx, keys.evaluation), -1, ctx, keys.evaluation), ctx)

    mapped = jax.vmap(f)(xs)
    batched = f(xs)
    for i in range(3):
        one = f(xs[i])
        np.testing.assert_array_equal(np.asarray(mapped.data[i]), np.asarray(one.data))
        np.testing.assert_array_equal(np.asarray(batched.data[i]), np.asarray(one.data))
    np.testing.assert_array_equal(_dec(mapped, ctx, keys), rotate_slots(a * b, -1, p.n) % p.plain_modulus)
    assert bgv.noise_budget(mapped, ctx, keys.secret).shape == (3,)


def test_for_levels(env, rng):
    """A context cut to some levels: only their tables, the same bits at those levels, a clear
    error at the others."""
    ctx, keys = env
    p = ctx.params
    top = p.max_level
    small = ctx.for_levels([top])
    assert small.levels() == (top,) and ctx.levels() == tuple(range(top + 1))
    assert [l for l, t in enumerate(small.keyswitch) if t is not None] == [top]
    a = random_slots(rng, p)
    x = _enc(a, ctx, keys, 10)
    evk = keys.evaluation
    f = jax.jit(lambda x, ctx, evk: bgv.mod_switch(bgv.square(x, ctx, evk), ctx))
    full, cut = f(x, ctx, evk), f(x, small, evk)
    np.testing.assert_array_equal(np.asarray(cut.data), np.asarray(full.data))
    with pytest.raises(ValueError, match="for_levels"):
        bgv.decrypt(cut, small, keys.secret)                   # level top - 1 was left out
    with pytest.raises(ValueError, match="for_levels"):
        bgv.rotate_rows(cut, 1, small, evk)
    with pytest.raises(ValueError, match="for_levels"):
        bgv.mod_switch(cut, small)


# -- bad inputs ----------------------------------------------------------------------------------

def test_bad_inputs(env, toy10, rng):
    ctx, keys = env
    p = ctx.params
    x = _enc(random_slots(rng, p), ctx, keys, 9)
    evk = keys.evaluation
    other_ctx, other_keys = toy10
    with pytest.raises(TypeError, match="BGVContext"):
        bgv.add(x, x, bfv.make_context(bfv.preset("toy-n12")))
    with pytest.raises(TypeError, match="bgv.Ciphertext"):
        bgv.neg(bfv.Ciphertext(data=x.data, params=bfv.preset("toy-n12")), ctx)
    with pytest.raises(ValueError, match="toy-n12"):
        bgv.add(x, _enc(random_slots(rng, other_ctx.params), other_ctx, other_keys, 9), ctx)
    with pytest.raises(ValueError, match="level 0"):
        bgv.mod_switch(bgv.mod_switch_to(x, 0, ctx), ctx)
    with pytest.raises(ValueError, match="above"):
        bgv.mod_switch_to(bgv.mod_switch(x, ctx), p.max_level, ctx)
    with pytest.raises(ValueError, match="level 7"):
        bgv.encrypt(bgv.encode(random_slots(rng, p), ctx), ctx, keys.public, level=7)
    with pytest.raises(ValueError, match="expected"):
        bgv.neg(x.replace(level=2), ctx)                 # data of level 5 labelled level 2
    with pytest.raises(ValueError, match="no rotation key"):
        bgv.rotate_rows(x, 2, ctx, evk)
    with pytest.raises(ValueError, match="column-swap key"):
        bgv.rotate_columns(x, ctx, bgv.EvalKeys(relin=evk.relin, rotations={}, columns=None, params=p))
    with pytest.raises(TypeError, match="traced"):
        jax.jit(lambda x, c: bgv.add(x, c, ctx))(x, 3)
    with pytest.raises(TypeError, match="Ciphertext, a Plaintext, a MulOperand or an int"):
        bgv.mul(x, 2.0, ctx)
    with pytest.raises(ValueError, match="degree 2"):
        bgv.rotate_rows(bgv.mul(x, x, ctx, relinearize=False), 1, ctx, evk)
    with pytest.raises(TypeError, match="SecretKey"):
        bgv.noise_budget(x, ctx, keys.public)
    with pytest.raises(ValueError, match="no modulus switch below level 0"):
        ctx.mod_switch_tables(0)
    with pytest.raises(TypeError, match="BGVParams"):
        bgv.make_context(bfv.preset("toy-n12"))
