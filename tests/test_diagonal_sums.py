"""ops.diagonal_sums (the giant-step sums of a BSGS linear transform) against Python integers
(edge residues 0, 1, q - 1; absent diagonals; more baby steps than one kernel call takes), the
same bits as the jnp form, under jit and vmap, and bad inputs."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import ops, rns
from jax_fhe.ops.diagonal import MAX_BABY

from conftest import random_residues


def _reference(xs, pts, index, primes):
    """out[g] = sum_i pts[index[g, i]] * xs[i] mod q in Python integers (object arrays)."""
    q = np.asarray([int(p) for p in primes], dtype=object).reshape(-1, 1)
    outs = []
    for row in index:
        acc = 0
        for i, d in enumerate(row):
            if d >= 0:
                acc = acc + xs[i].astype(object) * pts[d].astype(object)
        outs.append((acc % q).astype(np.uint32) if not isinstance(acc, int) else
                    np.zeros(xs[0].shape, np.uint32))
    return outs


def _case(rng, ps, n, k, g, d, batch=()):
    xs = [random_residues(rng, ps, n, batch=batch + (2,)) for _ in range(k)]
    pts = random_residues(rng, ps, n, batch=(d,))
    index = rng.integers(0, d, size=(g, k))
    index[rng.random((g, k)) < 0.25] = -1        # giant steps without some baby steps
    index[0] = -1                                  # one with none at all: zeros
    index[-1] = np.arange(k) % d                   # one with all of them
    return xs, pts, index


@pytest.mark.parametrize("bits, limbs, log_n, k, g", [(31, 3, 10, 9, 4), (30, 2, 11, 3, 7), (28, 4, 10, 1, 2)])
def test_matches_python_integers(bits, limbs, log_n, k, g, device, put, rng):
    n = 1 << log_n
    ps = rns.ntt_primes(bits, limbs, n)
    ctx = put(rns.make_context(ps, n))
    xs, pts, index = _case(rng, ps, n, k, g, d=5)
    q = np.asarray(ps, dtype=np.uint32).reshape(-1, 1)
    for x in xs:                                   # q - 1 times q - 1, many times over
        x[..., :4] = q - 1
    pts[..., :4] = q - 1
    got = ops.diagonal_sums([put(jnp.asarray(x)) for x in xs], put(jnp.asarray(pts)), index, ctx)
    want = _reference(xs, pts, index, ps)
    assert len(got) == g
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a), b)
    assert not np.asarray(got[0]).any()


def test_more_steps_than_one_launch(device, put, rng):
    """K > MAX_BABY baby steps (partial sums over chunks, added mod q) and more giant steps than
    one CUDA launch takes (16)."""
    n = 1024
    ps = rns.ntt_primes(30, 2, n)
    ctx = put(rns.make_context(ps, n))
    k = MAX_BABY + 5
    xs, pts, index = _case(rng, ps, n, k, g=20, d=7)
    got = ops.diagonal_sums([put(jnp.asarray(x)) for x in xs], put(jnp.asarray(pts)), index, ctx)
    for a, b in zip(got, _reference(xs, pts, index, ps)):
        np.testing.assert_array_equal(np.asarray(a), b)


@pytest.mark.parametrize("log_repeat", [1, 3, 10])
def test_repeated_words(log_repeat, device, put, rng):
    """Diagonals held once per run of 2^s equal words (pts [D, R, N >> s], a sparse packing):
    the same bits as the whole diagonals, every word repeated 2^s times; batched too."""
    n = 1024
    ps = rns.ntt_primes(31, 3, n)
    ctx = put(rns.make_context(ps, n))
    xs, pts, index = _case(rng, ps, n, k=6, g=5, d=4, batch=(2,))
    short = pts[..., ::1 << log_repeat]
    whole = np.repeat(short, 1 << log_repeat, axis=-1)
    xd = [put(jnp.asarray(x)) for x in xs]
    got = ops.diagonal_sums(xd, put(jnp.asarray(short)), index, ctx)
    want = _reference(xs, whole, index, ps)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a), b)
    f = jax.jit(jax.vmap(lambda *x: ops.diagonal_sums(x, put(jnp.asarray(short)), index, ctx)))
    for a, b in zip(f(*xd), want):
        np.testing.assert_array_equal(np.asarray(a), b)


def test_rows_and_same_bits_as_jnp(device, put, rng):
    n = 1024
    ps = rns.ntt_primes(30, 4, n)
    ctx = put(rns.make_context(ps, n))
    rows = (3, 1)
    sub = [ps[r] for r in rows]
    xs, pts, index = _case(rng, sub, n, k=4, g=3, d=6)
    xd = [put(jnp.asarray(x)) for x in xs]
    pd = put(jnp.asarray(pts))
    got = ops.diagonal_sums(xd, pd, index, ctx, rows)
    for g, row in enumerate(index):
        want = jnp.zeros_like(xd[0])
        for i, d in enumerate(row):
            if d >= 0:
                w = jnp.broadcast_to(pd[d], xd[i].shape)
                want = ops.add_mod(want, ops.mul_mod(xd[i], w, ctx, rows), ctx, rows)
        np.testing.assert_array_equal(np.asarray(got[g]), np.asarray(want))


def test_jit_and_vmap(device, put, rng):
    """A batch axis in the shapes, a vmapped batch (one baby rotation unbatched: shared by every
    entry), and nested in jit: the same bits as one call per entry."""
    n = 1024
    ps = rns.ntt_primes(30, 2, n)
    ctx = put(rns.make_context(ps, n))
    xs, pts, index = _case(rng, ps, n, k=5, g=3, d=4, batch=(3,))
    xd = [put(jnp.asarray(x)) for x in xs]
    pd = put(jnp.asarray(pts))
    f = jax.jit(lambda *a: ops.diagonal_sums(a[1:], a[0], index, ctx))
    one = [[np.asarray(o) for o in f(pd, *(x[b] for x in xd))] for b in range(3)]
    stacked = f(pd, *xd)                                                  # batch axis in the shape
    for g in range(3):
        np.testing.assert_array_equal(np.asarray(stacked[g]), np.stack([one[b][g] for b in range(3)]))
    shared = xd[2][1]                                                     # x_2 the same for all
    v = jax.jit(jax.vmap(lambda x0, x1, x3, x4: ops.diagonal_sums([x0, x1, shared, x3, x4], pd, index, ctx)))
    got = v(xd[0], xd[1], xd[3], xd[4])
    for b in range(3):
        want = f(pd, xd[0][b], xd[1][b], shared, xd[3][b], xd[4][b])
        for g in range(3):
            np.testing.assert_array_equal(np.asarray(got[g][b]), np.asarray(want[g]))


def test_bad_inputs(rng):
    n = 1024
    ps = rns.ntt_primes(30, 2, n)
    ctx = rns.make_context(ps, n)
    xs, pts, index = _case(rng, ps, n, k=2, g=2, d=3)
    with pytest.raises(ValueError, match="at least one baby"):
        ops.diagonal_sums([], pts, index, ctx)
    with pytest.raises(ValueError, match=r"index must be an integer array \[G, 2\]"):
        ops.diagonal_sums(xs, pts, index[:, :1], ctx)
    with pytest.raises(ValueError, match="-1 or diagonal numbers"):
        ops.diagonal_sums(xs, pts, np.full((2, 2), 3), ctx)
    with pytest.raises(ValueError, match=r"uint32\[\.\.\., 2, 2, 1024\]"):
        ops.diagonal_sums([xs[0], xs[1][0]], pts, index, ctx)
    with pytest.raises(ValueError, match=r"pts must be uint32\[D, R, N >> s\]"):
        ops.diagonal_sums(xs, pts[0], index, ctx)
    with pytest.raises(ValueError, match="do not broadcast|batch axes"):
        ops.diagonal_sums([np.stack([xs[0]] * 2), np.stack([xs[1]] * 3)], pts, index, ctx)
    for m in (n * 2, 3 * n // 4, 0):                # not N divided by a power of two
        with pytest.raises(ValueError, match="divided by a power of two"):
            ops.diagonal_sums(xs, np.zeros((3, 2, m), np.uint32), index, ctx)
    bad = pts.copy()
    bad[1, 0, 5] = ps[0]
    with pytest.raises(ValueError, match="canonical"):
        ops.diagonal_sums(xs, bad, index, ctx)
    with pytest.raises(TypeError, match="uint32"):
        ops.diagonal_sums(xs, pts.astype(np.int64), index, ctx)
    with pytest.raises(TypeError, match="RNSContext"):
        ops.diagonal_sums(xs, pts, index, None)
