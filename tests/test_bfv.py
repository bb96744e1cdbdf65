"""BFV end to end on the insecure test sets: every operation decrypts exactly to numpy integer
arithmetic mod t (slot-wise), through each toy preset's maximum depth; the measured noise
budget after every operation is at least what the analytic bound guarantees
(bfv.NoiseModel.for_key: the bound with the key's own secret peak), and for single operations
within 4 bits of it; jit == eager; vmap == loop; bad inputs raise."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import bfv, bgv, ops, rns
from jax_fhe.rns import HostRandom
from plainmod_helpers import Tracker, decrypt_slots, random_slots, rotate_slots, swap_rows, toy_fixtures

STEPS = (1, 5, -1)


toy12, toy10, env = toy_fixtures(bfv, STEPS)


def _enc(values, ctx, keys, seed, secret=False):
    key = keys.secret if secret else keys.public
    return bfv.encrypt(bfv.encode(values, ctx), ctx, key, HostRandom.insecure_deterministic(seed))


def _dec(ct, ctx, keys):
    return decrypt_slots(bfv, ct, ctx, keys)


# -- parameters ----------------------------------------------------------------------------------

def test_presets():
    cat, n14, toy = bfv.preset("cat-n15"), bfv.preset("n14"), bfv.preset("toy-n12")
    assert cat.n == 1 << 15 and cat.plain_modulus == 786433 and 860 < cat.log_pq <= 881 and not cat.insecure
    assert n14.n == 1 << 14 and n14.log_pq <= 438 and not n14.insecure
    assert toy.insecure and "INSECURE" in repr(toy)
    for p in (cat, n14, toy, bfv.preset("toy-n10")):
        assert (p.plain_modulus - 1) % (2 * p.n) == 0
        assert math.log2(math.prod(p.aux_primes)) >= p.aux_bits_needed
        assert p.max_depth >= 5
    # the analytic depths (the bound with a key-independent secret peak)
    assert (cat.max_depth, n14.max_depth, toy.max_depth, bfv.preset("toy-n10").max_depth) == (19, 9, 5, 17)
    with pytest.raises(ValueError, match="unknown BFV preset"):
        bfv.preset("nope")


def test_bad_parameters():
    p = bfv.preset("toy-n12")
    kw = dict(log_n=p.log_n, q_primes=p.q_primes, p_primes=p.p_primes, levels=p.levels, alpha=p.alpha,
              insecure=True, aux_primes=p.aux_primes)
    with pytest.raises(ValueError, match="odd prime"):
        bfv.BFVParams(plain_modulus=65536, **kw)
    with pytest.raises(ValueError, match="1 \\(mod 2N"):
        bfv.BFVParams(plain_modulus=65539, **kw)              # prime, but not 1 mod 2N
    with pytest.raises(ValueError, match="below every"):
        bfv.BFVParams(plain_modulus=rns.ntt_primes(31, 1, p.n, descending=False)[0], **kw)
    with pytest.raises(ValueError, match="auxiliary basis has"):
        bfv.BFVParams(plain_modulus=65537, **{**kw, "aux_primes": p.aux_primes[:3]})
    with pytest.raises(ValueError, match="differ from"):
        bfv.BFVParams(plain_modulus=65537, **{**kw, "aux_primes": p.aux_primes + p.q_primes[:1]})
    with pytest.raises(ValueError, match="full modulus"):
        bfv.BFVParams(plain_modulus=65537, **{**kw, "levels": ((0, 1), p.levels[0])})
    with pytest.raises(TypeError, match="int"):
        bfv.BFVParams(plain_modulus=65537.0, **kw)
    with pytest.raises(ValueError, match="128-bit"):
        bfv.BFVParams(plain_modulus=65537, **{**kw, "insecure": False})


# -- encoding ------------------------------------------------------------------------------------

def _negacyclic(a, b, t):
    n = a.shape[-1]
    full = np.convolve(a, b)
    out = full[:n].copy()
    out[: n - 1] -= full[n:]
    return out % t


def test_encoding_is_a_ring_isomorphism(toy10, put, rng):
    """Slot-wise products are negacyclic products of the coefficients mod t; X -> X^5 rotates
    the rows left by one; X -> X^-1 swaps them."""
    ctx, _ = put(toy10)
    p = ctx.params
    t, n = p.plain_modulus, p.n
    a, b = random_slots(rng, p), random_slots(rng, p)
    pa, pb = bfv.encode(a, ctx), bfv.encode(b, ctx)
    np.testing.assert_array_equal(np.asarray(bfv.decode(pa, ctx)), a)
    ca, cb = np.asarray(pa.data).astype(np.int64), np.asarray(pb.data).astype(np.int64)
    assert ca.max() < t
    prod = bfv.Plaintext(data=jnp.asarray(_negacyclic(ca, cb, t).astype(np.uint32)), params=p)
    np.testing.assert_array_equal(np.asarray(bfv.decode(prod, ctx)), a * b % t)
    for g, want in ((5, rotate_slots(a, 1, n)), (2 * n - 1, swap_rows(a, n))):
        moved = ops.automorphism_coeff(pa.data[None].astype(jnp.uint32), g, ctx.plain.ring)[0]
        np.testing.assert_array_equal(np.asarray(bfv.decode(bfv.Plaintext(data=moved, params=p), ctx)), want)
    # signed and jax inputs reduce mod t; a batch encodes at once
    np.testing.assert_array_equal(np.asarray(bfv.decode(bfv.encode(a - t, ctx), ctx)), a)
    np.testing.assert_array_equal(np.asarray(bfv.decode(bfv.encode(jnp.asarray(a, jnp.int32), ctx), ctx)), a)
    batch = bfv.encode(np.stack([a, b]), ctx)
    assert batch.data.shape == (2, n)
    np.testing.assert_array_equal(np.asarray(bfv.decode(batch, ctx)), np.stack([a, b]))


# -- every operation -----------------------------------------------------------------------------

def test_every_operation(env, rng):
    ctx, keys = env
    p = ctx.params
    t, n = p.plain_modulus, p.n
    tr = Tracker(bfv, ctx, keys)
    m = tr.model
    a, b, c = random_slots(rng, p), random_slots(rng, p), random_slots(rng, p)
    x, y = _enc(a, ctx, keys, 1), _enc(b, ctx, keys, 2, secret=True)
    ex, ey = m.fresh(public=True), m.fresh(public=False)
    tr.check("encrypt (public key)", x, ex, a, gap=4)
    tr.check("encrypt (secret key)", y, ey, b, gap=4)
    evk = keys.evaluation
    pc = bfv.encode(c, ctx)
    tr.check("add", bfv.add(x, y, ctx), m.add(ex, ey), a + b, gap=4)
    tr.check("sub", bfv.sub(x, y, ctx), m.add(ex, ey), a - b, gap=4)
    tr.check("neg", bfv.neg(x, ctx), ex, -a, gap=4)
    tr.check("add plaintext", bfv.add(x, pc, ctx), m.add_plain(ex), a + c, gap=4)
    tr.check("plaintext - ct", bfv.sub(pc, x, ctx), m.add_plain(ex), c - a, gap=4)
    tr.check("sub int", bfv.sub(x, 7, ctx), m.add_plain(ex), a - 7, gap=4)
    tr.check("mul plaintext", bfv.mul(x, pc, ctx), m.mul_plain(ex, bfv.plain_norm2(pc.data, t)), a * c, gap=4)
    tr.check("mul int", bfv.mul(x, -3, ctx), m.mul_const(ex, -3), -3 * a, gap=4)
    exy = m.relin(m.mul(ex, ey))
    xy = tr.check("mul (relinearized)", bfv.mul(x, y, ctx, evk), exy, a * b, gap=4)
    d2 = bfv.mul(x, y, ctx, relinearize=False)
    assert d2.size == 3
    tr.check("mul (degree 2)", d2, m.mul(ex, ey), a * b, gap=4)
    relin = bfv.relinearize(d2, ctx, evk)
    tr.check("relinearize", relin, exy, a * b, gap=4)
    assert abs(np.min(bfv.noise_budget(relin, ctx, keys.secret)) - xy) < 1
    tr.check("add degree 2 + 1", bfv.add(d2, x, ctx), m.add(m.mul(ex, ey), ex), a * b + a, gap=4)
    tr.check("square", bfv.square(x, ctx, evk), m.relin(m.mul(ex, ex)), a * a, gap=4)
    for k in STEPS + (0,):
        tr.check(f"rotate rows {k}", bfv.rotate_rows(x, k, ctx, evk), m.rotate(ex) if k else ex, rotate_slots(a, k, n),
                 gap=4)
    tr.check("rotate columns", bfv.rotate_columns(x, ctx, evk), m.rotate(ex), swap_rows(a, n), gap=4)
    for what, _, measured, bound in tr.rows:
        print(f"{what:24s} measured {measured:7.2f}  bound {bound:7.2f}")


def test_mul_operand(env, rng):
    """mul with a MulOperand (the plaintext lifted and transformed once) gives the same bits as
    with the Plaintext, eagerly, under jit and vmapped over a batch of operands; a Ciphertext or
    another parameter set's operand is refused."""
    ctx, keys = env
    p = ctx.params
    a, c = random_slots(rng, p), random_slots(rng, p, (3,))
    x = _enc(a, ctx, keys, 1)
    pcs = bfv.encode(c, ctx)
    ops_ = jax.jit(bfv.mul_operand)(pcs, ctx)
    assert isinstance(ops_, bfv.MulOperand) and ops_.data.shape == (3, p.num_q, p.n) and ops_.level is None
    want = bfv.mul(x, pcs, ctx)
    np.testing.assert_array_equal(np.asarray(bfv.mul(x, ops_, ctx).data), np.asarray(want.data))
    np.testing.assert_array_equal(np.asarray(jax.jit(bfv.mul)(x, ops_, ctx).data), np.asarray(want.data))
    assert np.array_equal(_dec(bfv.mul(x, ops_, ctx), ctx, keys), a * c % p.plain_modulus)
    with pytest.raises(TypeError, match="MulOperand"):
        bfv.add(x, ops_, ctx)
    with pytest.raises(ValueError, match="MulOperand data"):
        bfv.mul(x, bfv.MulOperand(data=ops_.data[..., :1, :], params=p), ctx)


@pytest.mark.parametrize("name", ["toy-n12", "toy-n10"])
def test_depth(name, toy12, toy10, put, rng):
    """x <- relin(x * rotate(x, 1)) + c, to the preset's maximum depth: exact decryption and
    the measured budget above the bound after every operation."""
    ctx, keys = put(toy12 if name == "toy-n12" else toy10)
    p = ctx.params
    t, n = p.plain_modulus, p.n
    tr = Tracker(bfv, ctx, keys)
    m = tr.model
    a = random_slots(rng, p)
    x, e = _enc(a, ctx, keys, 3), m.fresh(public=True)
    evk = keys.evaluation
    for d in range(1, p.max_depth + 1):
        r = bfv.rotate_rows(x, 1, ctx, evk)
        er = tr.model.rotate(e)
        tr.check(f"depth {d - 1} rotate", r, er, rotate_slots(a, 1, n))
        prod = bfv.mul(x, r, ctx, evk)
        e = m.relin(m.mul(e, er))
        a = a * rotate_slots(a, 1, n) % t
        tr.check(f"depth {d} mul", prod, e, a)
        c = random_slots(rng, p)
        x, e, a = bfv.add(prod, bfv.encode(c, ctx), ctx), m.add_plain(e), (a + c) % t
        left = tr.check(f"depth {d} add plaintext", x, e, a)
    assert left > 0
    for what, _, measured, bound in tr.rows:
        print(f"{name} {what:24s} measured {measured:7.2f}  bound {bound:7.2f}")


# -- jit, vmap -----------------------------------------------------------------------------------

def test_jit_equals_eager(env, rng):
    ctx, keys = env
    p = ctx.params
    a, b, c = random_slots(rng, p), random_slots(rng, p), random_slots(rng, p)
    x, y = _enc(a, ctx, keys, 4), _enc(b, ctx, keys, 5)
    pc = bfv.encode(c, ctx)

    def circuit(x, y, pc, ctx, evk):
        u = bfv.mul(bfv.rotate_rows(x, 5, ctx, evk), y, ctx, evk)
        u = bfv.sub(bfv.add(u, pc, ctx), bfv.mul(x, pc, ctx), ctx)
        return bfv.rotate_columns(bfv.square(u, ctx, evk), ctx, evk)

    eager = circuit(x, y, pc, ctx, keys.evaluation)
    jitted = jax.jit(circuit)(x, y, pc, ctx, keys.evaluation)
    np.testing.assert_array_equal(np.asarray(jitted.data), np.asarray(eager.data))
    t, n = p.plain_modulus, p.n
    want = swap_rows(((rotate_slots(a, 5, n) * b + c - a * c) % t) ** 2, n)
    np.testing.assert_array_equal(_dec(jitted, ctx, keys), want % t)
    dec = jax.jit(bfv.decrypt)(jitted, ctx, keys.secret)
    np.testing.assert_array_equal(np.asarray(dec.data), np.asarray(bfv.decrypt(eager, ctx, keys.secret).data))
    enc = jax.jit(bfv.encode)(jnp.asarray(a, jnp.int32), ctx)
    np.testing.assert_array_equal(np.asarray(enc.data), np.asarray(bfv.encode(a, ctx).data))


def test_vmap_equals_loop(env, rng):
    ctx, keys = env
    p = ctx.params
    a, b = random_slots(rng, p, (3,)), random_slots(rng, p)
    xs = _enc(a, ctx, keys, 6)                           # a batch of three in one encryption
    y = _enc(b, ctx, keys, 7)
    assert xs.data.shape == (3, 2, p.num_q, p.n) and xs.batch_shape == (3,)

    def f(x):
        return bfv.rotate_rows(bfv.mul(x, y, ctx, keys.evaluation), -1, ctx, keys.evaluation)

    mapped = jax.vmap(f)(xs)
    batched = f(xs)                                      # leading axes broadcast through every op
    for i in range(3):
        one = f(xs[i])
        np.testing.assert_array_equal(np.asarray(mapped.data[i]), np.asarray(one.data))
        np.testing.assert_array_equal(np.asarray(batched.data[i]), np.asarray(one.data))
    np.testing.assert_array_equal(_dec(mapped, ctx, keys), rotate_slots(a * b, -1, p.n) % p.plain_modulus)
    budgets = bfv.noise_budget(mapped, ctx, keys.secret)
    assert budgets.shape == (3,) and np.all(budgets > 0)


# -- bad inputs ----------------------------------------------------------------------------------

def test_bad_inputs(env, toy10, rng):
    ctx, keys = env
    p = ctx.params
    x = _enc(random_slots(rng, p), ctx, keys, 8)
    evk = keys.evaluation
    other_ctx, other_keys = toy10
    with pytest.raises(TypeError, match="BFVContext"):
        bfv.add(x, x, "ctx")
    with pytest.raises(ValueError, match="toy-n12"):
        bfv.add(x, _enc(random_slots(rng, other_ctx.params), other_ctx, other_keys, 9), ctx)
    with pytest.raises(TypeError, match="Ciphertext, a Plaintext or an int"):
        bfv.add(x, 1.5, ctx)
    with pytest.raises(TypeError, match="Ciphertext, a Plaintext, a MulOperand or an int"):
        bfv.mul(x, True, ctx)
    with pytest.raises(ValueError, match="relinearization key"):
        bfv.mul(x, x, ctx, bfv.EvalKeys(relin=None, rotations={}, columns=None, params=p))
    with pytest.raises(TypeError, match="EvalKeys"):
        bfv.mul(x, x, ctx, None)
    with pytest.raises(ValueError, match="no rotation key for step 2"):
        bfv.rotate_rows(x, 2, ctx, evk)
    with pytest.raises(TypeError, match="int"):
        bfv.rotate_rows(x, 1.0, ctx, evk)
    with pytest.raises(TypeError, match="traced"):
        jax.jit(lambda x, k: bfv.rotate_rows(x, k, ctx, evk))(x, 1)
    with pytest.raises(TypeError, match="traced"):
        jax.jit(lambda x, c: bfv.mul(x, c, ctx))(x, 3)
    d2 = bfv.mul(x, x, ctx, relinearize=False)
    with pytest.raises(ValueError, match="degree 2"):
        bfv.rotate_rows(d2, 1, ctx, evk)
    with pytest.raises(ValueError, match="degree-1 operands"):
        bfv.mul(d2, x, ctx, evk)
    with pytest.raises(ValueError, match="shape"):
        bfv.add(x.replace(data=x.data[..., :3, :]), x, ctx)
    with pytest.raises(TypeError, match="uint32"):
        bfv.neg(x.replace(data=x.data.astype(jnp.int32)), ctx)
    with pytest.raises(ValueError, match="coefficient domain"):
        bfv.neg(x.replace(is_ntt=False), ctx)
    with pytest.raises(TypeError, match="integers"):
        bfv.encode(np.zeros(p.n), ctx)
    with pytest.raises(ValueError, match="shape"):
        bfv.encode(np.zeros(p.n // 2, np.int64), ctx)
    with pytest.raises(ValueError, match="plaintext data has shape"):
        bfv.add(x, bfv.Plaintext(data=jnp.zeros((p.n // 2,), jnp.uint32), params=p), ctx)
    with pytest.raises(TypeError, match="PublicKey or SecretKey"):
        bfv.encrypt(bfv.encode(random_slots(rng, p), ctx), ctx, evk)
    with pytest.raises(TypeError, match="SecretKey"):
        bfv.decrypt(x, ctx, keys.public)
    with pytest.raises(ValueError, match="toy-n10"):
        bfv.decrypt(x, ctx, other_keys.secret)
    with pytest.raises(TypeError, match="BFVParams"):
        bfv.make_context(bgv.preset("toy-n12"))
