"""ops.tensor_product: (x0 y0, x0 y1 + x1 y0, x1 y1) mod q against Python integers (edge residues
0, 1, q - 1 included), the same bits as the jnp form, under jit and vmap (either operand
unbatched), and bad inputs."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import ops, rns

from conftest import random_residues


def _reference(x, y, primes):
    """Python-integer tensor product of x, y: [..., 2, L, N] lists via numpy object arrays."""
    q = np.asarray([int(p) for p in primes], dtype=object).reshape(-1, 1)
    x, y = x.astype(object), y.astype(object)
    x0, x1, y0, y1 = x[..., 0, :, :], x[..., 1, :, :], y[..., 0, :, :], y[..., 1, :, :]
    return np.stack([x0 * y0 % q, (x0 * y1 + x1 * y0) % q, x1 * y1 % q], axis=-3).astype(np.uint32)


@pytest.mark.parametrize("bits, limbs, log_n", [(31, 3, 10), (30, 2, 12), (28, 4, 11)])
def test_matches_python_integers(bits, limbs, log_n, device, put, rng):
    n = 1 << log_n
    ps = rns.ntt_primes(bits, limbs, n)
    ctx = put(rns.make_context(ps, n))
    x = random_residues(rng, ps, n, batch=(2, 2))
    y = random_residues(rng, ps, n, batch=(2, 2))
    y[..., 1, :, :3] = x[..., 0, :, :3][..., ::-1]   # edge values meet edge values too
    got = np.asarray(ops.tensor_product(put(jnp.asarray(x)), put(jnp.asarray(y)), ctx))
    np.testing.assert_array_equal(got, _reference(x, y, ps))
    sq = np.asarray(ops.tensor_product(put(jnp.asarray(x)), put(jnp.asarray(x)), ctx))
    np.testing.assert_array_equal(sq, _reference(x, x, ps))


def test_square_of_one_buffer(device, put, rng):
    """x times itself from one buffer (under jit both operands are the same buffer, as in BGV's
    and BFV's square) and batched by vmap, against Python integers."""
    n = 2048
    ps = rns.ntt_primes(30, 3, n)
    ctx = put(rns.make_context(ps, n))
    x = random_residues(rng, ps, n, batch=(4, 2))
    x[..., 1, :, :3] = x[..., 0, :, :3]            # x0 = x1 somewhere: 2 x0 x1 = 2 x0^2
    xd = put(jnp.asarray(x))
    want = _reference(x, x, ps)
    square = jax.jit(lambda a, c: ops.tensor_product(a, a, c))
    np.testing.assert_array_equal(np.asarray(square(xd[2], ctx)), want[2])
    np.testing.assert_array_equal(np.asarray(square(xd, ctx)), want)           # batch axis in the shape
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(square, in_axes=(0, None)))(xd, ctx)), want)


def test_rows_and_same_bits_as_jnp(device, put, rng):
    n = 1024
    ps = rns.ntt_primes(30, 4, n)
    ctx = put(rns.make_context(ps, n))
    rows = (1, 3)
    x = random_residues(rng, [ps[r] for r in rows], n, batch=(2,))
    y = random_residues(rng, [ps[r] for r in rows], n, batch=(2,))
    xd, yd = put(jnp.asarray(x)), put(jnp.asarray(y))
    got = np.asarray(ops.tensor_product(xd, yd, ctx, rows))
    mm = lambda a, b: ops.mul_mod(a, b, ctx, rows)  # noqa: E731
    want = jnp.stack([mm(xd[0], yd[0]), ops.add_mod(mm(xd[0], yd[1]), mm(xd[1], yd[0]), ctx, rows),
                      mm(xd[1], yd[1])])
    np.testing.assert_array_equal(got, np.asarray(want))


def test_jit_and_vmap(device, put, rng):
    n = 1024
    ps = rns.ntt_primes(30, 2, n)
    ctx = put(rns.make_context(ps, n))
    xs = put(jnp.asarray(random_residues(rng, ps, n, batch=(3, 2))))
    ys = put(jnp.asarray(random_residues(rng, ps, n, batch=(3, 2))))
    one = [np.asarray(ops.tensor_product(xs[i], ys[i], ctx)) for i in range(3)]
    f = jax.jit(lambda a, b, c: ops.tensor_product(a, b, c))
    np.testing.assert_array_equal(np.asarray(f(xs[1], ys[1], ctx)), one[1])
    both = jax.jit(jax.vmap(f, in_axes=(0, 0, None)))(xs, ys, ctx)
    np.testing.assert_array_equal(np.asarray(both), np.stack(one))
    x_only = jax.vmap(f, in_axes=(0, None, None))(xs, ys[2], ctx)      # y shared
    np.testing.assert_array_equal(np.asarray(x_only),
                                  np.stack([np.asarray(ops.tensor_product(xs[i], ys[2], ctx)) for i in range(3)]))
    y_only = jax.vmap(f, in_axes=(None, 0, None))(xs[0], ys, ctx)      # x shared
    np.testing.assert_array_equal(np.asarray(y_only),
                                  np.stack([np.asarray(ops.tensor_product(xs[0], ys[i], ctx)) for i in range(3)]))


def test_nested_vmap_over_different_axes(device, put, rng):
    """x batched by the outer vmap, y by the inner one: every (i, j) pair (the kernel's per-axis
    broadcast, not the flat fast path)."""
    n = 1024
    ps = rns.ntt_primes(30, 2, n)
    ctx = put(rns.make_context(ps, n))
    xs = put(jnp.asarray(random_residues(rng, ps, n, batch=(3, 2))))
    ys = put(jnp.asarray(random_residues(rng, ps, n, batch=(4, 2))))
    f = jax.vmap(jax.vmap(lambda a, b: ops.tensor_product(a, b, ctx), in_axes=(None, 0)), in_axes=(0, None))
    got = np.asarray(jax.jit(f)(xs, ys))
    assert got.shape == (3, 4, 3, 2, n)
    for i in range(3):
        for j in range(4):
            np.testing.assert_array_equal(got[i, j], np.asarray(ops.tensor_product(xs[i], ys[j], ctx)))


def test_bad_inputs(rng):
    n = 1024
    ps = rns.ntt_primes(30, 2, n)
    ctx = rns.make_context(ps, n)
    x = random_residues(rng, ps, n, batch=(2,))
    with pytest.raises(ValueError, match=r"degree-1"):
        ops.tensor_product(random_residues(rng, ps, n, batch=(3,)), random_residues(rng, ps, n, batch=(3,)), ctx)
    with pytest.raises(ValueError, match="shapes differ"):
        ops.tensor_product(x, random_residues(rng, ps, n, batch=(1, 2)), ctx)
    bad = x.copy()
    bad[1, 0, 5] = ps[0]
    with pytest.raises(ValueError, match="canonical"):
        ops.tensor_product(x, bad, ctx)
    with pytest.raises(TypeError, match="uint32"):
        ops.tensor_product(x.astype(np.int64), x, ctx)
    with pytest.raises(TypeError, match="RNSContext"):
        ops.tensor_product(x, x, None)
