"""Element-wise modular arithmetic (jnp, Montgomery via lax.mulhi) against Python integers."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import ops, rns

from conftest import random_residues


@pytest.mark.parametrize("bits", [20, 30, 31])
def test_elementwise_ops_match_python(bits, device, put, rng):
    n = 1024
    ps = rns.ntt_primes(bits, 3, n)
    ctx = put(rns.make_context(ps, n))
    a, b, c = (random_residues(rng, ps, n, batch=(2,)) for _ in range(3))  # batch axis too
    b[..., 3:6] = a[..., 3:6]                     # a == b
    b[..., :3] = np.array(ps, np.uint32)[:, None] - 1  # q - 1 against 0, 1, q - 1
    A, B, C = (put(jnp.asarray(v)) for v in (a, b, c))
    got = {
        "add": ops.add_mod(A, B, ctx), "sub": ops.sub_mod(A, B, ctx), "neg": ops.neg_mod(A, ctx),
        "mul": ops.mul_mod(A, B, ctx), "mac": ops.mac_mod(C, A, B, ctx),
    }
    got = {k: np.asarray(v) for k, v in got.items()}
    for t, q in enumerate(ps):
        ai, bi, ci = (v[:, t].astype(object) for v in (a, b, c))
        expect = {"add": (ai + bi) % q, "sub": (ai - bi) % q, "neg": (-ai) % q,
                  "mul": (ai * bi) % q, "mac": (ci + ai * bi) % q}
        for k, e in expect.items():
            assert got[k][:, t].tolist() == e.tolist(), k


def test_reduce_mod_any_uint32(device, put, rng):
    n = 1024
    ps = rns.ntt_primes(31, 2, n)
    ctx = put(rns.make_context(ps, n))
    x = rng.integers(0, 2**32, (2, n), dtype=np.uint64).astype(np.uint32)
    x[:, :4] = [0, 2**32 - 1, ps[0], 2**31]
    y = np.asarray(ops.reduce_mod(put(jnp.asarray(x)), ctx))
    for t, q in enumerate(ps):
        assert y[t].tolist() == [int(v) % q for v in x[t]]


def test_mul_limb_consts(device, put, rng):
    n = 1024
    ps = rns.ntt_primes(30, 3, n)
    ctx = put(rns.make_context(ps, n))
    x = random_residues(rng, ps, n, batch=(2,))
    c = np.array([0, 1, ps[2] - 1], dtype=np.uint32)
    y = np.asarray(ops.mul_limb_consts(put(jnp.asarray(x)), put(jnp.asarray(c)), ctx))
    for l, q in enumerate(ps):
        assert y[:, l].tolist() == [[int(v) * int(c[l]) % q for v in row] for row in x[:, l]]
    with pytest.raises(ValueError, match="one per limb"):
        ops.mul_limb_consts(jnp.asarray(x), jnp.asarray(c[:2]), ctx)
    with pytest.raises(ValueError, match="one per limb"):
        ops.mul_limb_consts(jnp.asarray(x), jnp.asarray(c, dtype=jnp.int32), ctx)


def test_jit_and_rows(rng):
    n = 1024
    ps = rns.ntt_primes(30, 4, n)
    ctx = rns.make_context(ps, n)
    rows = (3, 0)
    a = jnp.asarray(random_residues(rng, [ps[r] for r in rows], n))
    b = jnp.asarray(random_residues(rng, [ps[r] for r in rows], n))
    eager = ops.mul_mod(a, b, ctx, rows=rows)
    jitted = jax.jit(lambda x, y, c: ops.mul_mod(x, y, c, rows=rows))(a, b, ctx)
    np.testing.assert_array_equal(np.asarray(eager), np.asarray(jitted))
    for i, r in enumerate(rows):
        e = (np.asarray(a[i]).astype(object) * np.asarray(b[i]).astype(object)) % ps[r]
        assert np.asarray(eager[i]).tolist() == e.tolist()


def test_shape_mismatch():
    n = 1024
    ctx = rns.make_context(rns.ntt_primes(30, 2, n), n)
    with pytest.raises(ValueError, match="shapes differ"):
        ops.add_mod(jnp.zeros((2, n), jnp.uint32), jnp.zeros((1, n), jnp.uint32), ctx)
