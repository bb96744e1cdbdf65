"""The fused key inner product of hybrid key switching (ops.digit_key_product): bit-exact
against a Python-integer reference, with and without the ModDown epilogue, on every backend."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import ops, rns

from conftest import random_residues

N = 1024


def _case(rng, digits, rows, lx=5, conv_rows=7, batch=2, key_polys=40, bits=31, n=N):
    """Random operands and plan: output row j uses prime j; the sources and key polynomials are
    random (every source a valid index), residues with the edge values 0, 1, q - 1."""
    primes = rns.ntt_primes(bits, rows, n)
    # a source row can hold any residues below 2^31; the kernel only needs canonical operands
    # w.r.t. nothing but 32-bit range, so sample them below the largest prime
    big = [max(primes)] * max(lx, conv_rows)
    x = random_residues(rng, big[:lx], n, batch=(batch,))
    convs = [random_residues(rng, big[:conv_rows], n, batch=(batch,)) for _ in range(digits)]
    key = random_residues(rng, [max(primes)] * key_polys, n)
    source = rng.integers(0, lx + conv_rows, size=(digits, rows))
    key_part = 3
    key_poly = rng.integers(0, key_polys - key_part, size=(digits, rows))
    return primes, x, convs, key, source, key_poly, key_part


def _reference(x, convs, key, source, key_poly, key_part, primes, cols, sub=None, scale=None):
    lx = x.shape[-2]
    batch, digits, rows = x.shape[0], len(convs), len(primes)
    out = np.zeros((batch, 2, rows, len(cols)), dtype=np.uint32)
    for b in range(batch):
        for c in range(2):
            for j, p in enumerate(primes):
                for t, col in enumerate(cols):
                    acc = 0
                    for i in range(digits):
                        s = int(source[i, j])
                        v = int(x[b, s, col]) if s < lx else int(convs[i][b, s - lx, col])
                        acc += v * int(key[int(key_poly[i, j]) + c * key_part, col])
                    acc %= p
                    if sub is not None:
                        acc = (acc - int(sub[b, c, j, col])) * int(scale[j]) % p
                    out[b, c, j, t] = acc
    return out


@pytest.mark.parametrize("digits, rows", [(1, 3), (3, 12), (4, 5), (6, 4), (2, 70)])
def test_matches_integer_reference(digits, rows, device, put, rng):
    """D = 6 folds the 64-bit sums after four terms; 70 rows take two launches."""
    primes, x, convs, key, source, key_poly, key_part = _case(rng, digits, rows)
    y = np.asarray(ops.digit_key_product(put(jnp.asarray(x)), [put(jnp.asarray(c)) for c in convs],
                                         put(jnp.asarray(key)), source=source, key_poly=key_poly,
                                         key_part=key_part, moduli=primes))
    assert y.shape == (2, 2, rows, N) and y.dtype == np.uint32
    cols = sorted({0, 1, 2, N - 1, *rng.integers(0, N, 12).tolist()})
    want = _reference(x, convs, key, source, key_poly, key_part, primes, cols)
    np.testing.assert_array_equal(y[..., cols], want)


@pytest.mark.parametrize("digits, rows", [(1, 6), (4, 6), (5, 6), (8, 3), (2, 70)])
def test_mod_down_epilogue(digits, rows, device, put, rng):
    """D = 8 folds once; 70 rows: the second launch's rows of sub and out start at row 64."""
    primes, x, convs, key, source, key_poly, key_part = _case(rng, digits, rows)
    sub = np.stack([random_residues(rng, primes, N, batch=(2,)) for _ in range(2)], axis=1)
    scale = [int(v) % p for v, p in zip(rng.integers(0, 2**31, rows), primes)]
    scale[0] = primes[0] - 1
    y = np.asarray(ops.digit_key_product(put(jnp.asarray(x)), [put(jnp.asarray(c)) for c in convs],
                                         put(jnp.asarray(key)), source=source, key_poly=key_poly,
                                         key_part=key_part, moduli=primes, sub=put(jnp.asarray(sub)),
                                         scale=scale))
    cols = sorted({0, 1, 2, N - 1, *rng.integers(0, N, 12).tolist()})
    want = _reference(x, convs, key, source, key_poly, key_part, primes, cols, sub=sub, scale=scale)
    np.testing.assert_array_equal(y[..., cols], want)


@pytest.mark.parametrize("log_n, digits, rows, batch, bits", [
    (16, 4, 5, 1, 30),   # one ciphertext: fused rows phase, lazy butterflies
    (16, 3, 4, 1, 31),   # fused, canonical butterflies
    (15, 5, 3, 1, 30),   # fused at N = 2^15 (first phase K1 = 7), 5 digits fold once
    (16, 3, 4, 2, 31),   # a batch: the NTT (4 polynomials per thread), then the key product
    (15, 2, 3, 3, 30),   # a batch: 2 polynomials per thread
    (10, 2, 70, 1, 30),  # N = 2^10: the NTT, then the key product; 2 plans
])
def test_mod_down_ntt_epilogue(log_n, digits, rows, batch, bits, device, put, rng):
    """sub in the coefficient domain (sub_ntt): bit for bit the epilogue on ops.ntt(sub). On the
    GPU, for one ciphertext at N = 2^15 and 2^16, the NTT's second phase and the key product
    are one kernel."""
    n = 1 << log_n
    primes, x, convs, key, source, key_poly, key_part = _case(rng, digits, rows, batch=batch, bits=bits, n=n)
    ring = put(rns.make_context(primes, n))
    sub = np.stack([random_residues(rng, primes, n, batch=(batch,)) for _ in range(2)], axis=1)
    scale = [int(v) % p for v, p in zip(rng.integers(0, 2**31, rows), primes)]
    scale[0] = primes[0] - 1
    kw = dict(source=source, key_poly=key_poly, key_part=key_part, moduli=primes, scale=scale)
    xd, cd, kd, sd = put(jnp.asarray(x)), [put(jnp.asarray(c)) for c in convs], put(jnp.asarray(key)), put(jnp.asarray(sub))
    rows_ = tuple(range(rows))
    want = np.asarray(ops.digit_key_product(xd, cd, kd, sub=ops.ntt(sd, ring, rows_), **kw))
    got = ops.digit_key_product(xd, cd, kd, sub=sd, sub_ntt=(ring, rows_), **kw)
    np.testing.assert_array_equal(np.asarray(got), want)
    # jit and vmap over the ciphertexts (x, conversions and sub batched; the key shared)
    f = jax.jit(jax.vmap(lambda v, s, *c: ops.digit_key_product(v, list(c), kd, sub=s, sub_ntt=(ring, rows_), **kw)))
    np.testing.assert_array_equal(np.asarray(f(xd, sd, *cd)), want)
    if log_n == 10:
        with pytest.raises(ValueError, match="primes differ from moduli"):
            ops.digit_key_product(xd, cd, kd, sub=sd, sub_ntt=(ring, rows_[::-1]), **kw)
        with pytest.raises(ValueError, match="N=1024 but the NTT tables"):
            ops.digit_key_product(xd, cd, kd, sub=sd, sub_ntt=(rns.make_context(rns.ntt_primes(30, rows, 2048), 2048), rows_), **kw)


@pytest.mark.parametrize("log_n, digits, rows, batch, bits", [
    (16, 4, 5, 1, 30),   # one ciphertext: the product in the INTT's first phase, lazy butterflies
    (16, 3, 4, 1, 31),   # fused, canonical butterflies
    (15, 5, 3, 1, 30),   # fused at N = 2^15, 5 digits fold once
    (16, 3, 4, 2, 31),   # a batch: the key product, then the INTT (4 polynomials per thread)
    (15, 2, 3, 3, 30),   # a batch: 2 polynomials per thread
    (10, 2, 70, 1, 30),  # N = 2^10: the key product, then the INTT; 2 plans
])
def test_intt_prologue(log_n, digits, rows, batch, bits, device, put, rng):
    """intt: bit for bit ops.intt of the product. On the GPU, for one ciphertext at N = 2^15 and
    2^16, the product is computed in the INTT's first phase."""
    n = 1 << log_n
    primes, x, convs, key, source, key_poly, key_part = _case(rng, digits, rows, batch=batch, bits=bits, n=n)
    ring = put(rns.make_context(primes, n))
    kw = dict(source=source, key_poly=key_poly, key_part=key_part, moduli=primes)
    xd, cd, kd = put(jnp.asarray(x)), [put(jnp.asarray(c)) for c in convs], put(jnp.asarray(key))
    rows_ = tuple(range(rows))
    want = np.asarray(ops.intt(ops.digit_key_product(xd, cd, kd, **kw), ring, rows_))
    got = ops.digit_key_product(xd, cd, kd, intt=(ring, rows_), **kw)
    np.testing.assert_array_equal(np.asarray(got), want)
    f = jax.jit(jax.vmap(lambda v, *c: ops.digit_key_product(v, list(c), kd, intt=(ring, rows_), **kw)))
    np.testing.assert_array_equal(np.asarray(f(xd, *cd)), want)
    if log_n == 10:
        with pytest.raises(ValueError, match="primes differ from moduli"):
            ops.digit_key_product(xd, cd, kd, intt=(ring, rows_[::-1]), **kw)
        with pytest.raises(ValueError, match="intt must be a pair"):
            ops.digit_key_product(xd, cd, kd, intt=ring, **kw)
        sub = jnp.zeros((batch, 2, rows, n), jnp.uint32)
        with pytest.raises(ValueError, match="intt is not used with sub"):
            ops.digit_key_product(xd, cd, kd, sub=sub, scale=[1] * rows, intt=(ring, rows_), **kw)


def test_jit_vmap_and_shared_operands(device, put, rng):
    """jit equals eager; vmap over x only (the conversions shared by every entry) equals a loop;
    a batch-1 operand serves every batch entry."""
    primes, x, convs, key, source, key_poly, key_part = _case(rng, 3, 4, batch=3)
    kw = dict(source=source, key_poly=key_poly, key_part=key_part, moduli=primes)
    xs, cs, k = put(jnp.asarray(x)), [put(jnp.asarray(c[0])) for c in convs], put(jnp.asarray(key))
    f = lambda v: ops.digit_key_product(v, cs, k, **kw)  # noqa: E731
    eager = np.stack([np.asarray(f(xs[b])) for b in range(3)])
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(f))(xs)), eager)
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(xs[1])), eager[1])
    shared = ops.digit_key_product(xs, [c[None] for c in cs], k, **kw)
    np.testing.assert_array_equal(np.asarray(shared), eager)
    # x shared, conversions batched (and under vmap over the conversions only)
    cb = [put(jnp.asarray(c)) for c in convs]
    g = lambda *cv: ops.digit_key_product(xs[1], list(cv), k, **kw)  # noqa: E731
    loop = np.stack([np.asarray(g(*(c[b] for c in cb))) for b in range(3)])
    np.testing.assert_array_equal(np.asarray(jax.vmap(g)(*cb)), loop)
    np.testing.assert_array_equal(np.asarray(ops.digit_key_product(xs[1][None], cb, k, **kw)), loop)


def test_batched_keys_and_shared_sub(device, put, rng):
    """vmap over keys (each entry its own key) equals a loop; a sub with one batch entry serves
    every entry."""
    primes, x, convs, key, source, key_poly, key_part = _case(rng, 3, 5, batch=2)
    kw = dict(source=source, key_poly=key_poly, key_part=key_part, moduli=primes)
    keys = put(jnp.asarray(np.stack([key, np.roll(key, 7, axis=-1), np.roll(key, 1, axis=0)])))
    xs, cs = put(jnp.asarray(x[0])), [put(jnp.asarray(c[0])) for c in convs]
    f = lambda k: ops.digit_key_product(xs, cs, k, **kw)  # noqa: E731
    loop = np.stack([np.asarray(f(keys[i])) for i in range(3)])
    assert not np.array_equal(loop[0], loop[1])
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(f))(keys)), loop)
    sub = random_residues(rng, primes, N, batch=(2,))
    scale = [3] * len(primes)
    xb, cb = put(jnp.asarray(x)), [put(jnp.asarray(c)) for c in convs]
    h = lambda s: ops.digit_key_product(xb, cb, keys[0], sub=s, scale=scale, **kw)  # noqa: E731
    got = np.asarray(h(put(jnp.asarray(sub))[None]))
    cols = sorted({0, 1, N - 1, *rng.integers(0, N, 8).tolist()})
    want = _reference(x, convs, np.asarray(keys[0]), source, key_poly, key_part, primes, cols,
                      sub=np.broadcast_to(sub, (2,) + sub.shape), scale=scale)
    np.testing.assert_array_equal(got[..., cols], want)


def test_bad_inputs():
    rng = np.random.default_rng(0)
    primes, x, convs, key, source, key_poly, key_part = _case(rng, 2, 3)
    kw = dict(source=source, key_poly=key_poly, key_part=key_part, moduli=primes)
    x, key = jnp.asarray(x), jnp.asarray(key)
    convs = [jnp.asarray(c) for c in convs]
    call = lambda **over: ops.digit_key_product(  # noqa: E731
        over.pop("x", x), over.pop("convs", convs), over.pop("key", key), **{**kw, **over})
    with pytest.raises(ValueError, match="source and key_poly"):
        call(source=source[:1])
    with pytest.raises(ValueError, match="1 to 8 digits"):
        call(convs=[], source=np.zeros((0, 3)), key_poly=np.zeros((0, 3)))
    with pytest.raises(TypeError, match="uint32"):
        call(x=x.astype(jnp.int32))
    with pytest.raises(ValueError, match="conv shape"):
        call(convs=[convs[0], jnp.concatenate([convs[1]] * 2, axis=-1)])
    with pytest.raises(ValueError, match="batch axes"):
        call(convs=[convs[0], jnp.concatenate([convs[1]] * 2)[:3]])
    with pytest.raises(ValueError, match="sub must have shape"):
        call(sub=jnp.zeros((2, 2, 2, N), jnp.uint32), scale=[1, 1, 1])
    with pytest.raises(ValueError, match="scale and sub_ntt are only used with sub"):
        call(scale=[1, 1, 1])
    bad = source.copy()
    bad[1, 2] = x.shape[-2] + convs[1].shape[-2]
    with pytest.raises(Exception, match="source.*out of range"):
        jax.block_until_ready(call(source=bad))
    with pytest.raises(Exception, match="outside the key"):
        jax.block_until_ready(call(key_poly=np.full_like(key_poly, key.shape[0] - 1)))
    with pytest.raises(Exception, match="odd and below 2\\^31"):
        jax.block_until_ready(call(moduli=[4, 5, 7]))


def test_one_stacked_conversion_for_every_digit(device, put):
    """One conversion operand read by every digit (ModUp's stacked conversions): the sources
    index its limbs, digit after digit; bit for bit the per-digit operands."""
    rng = np.random.default_rng(5)
    primes, x, convs, key, source, key_poly, key_part = _case(rng, 3, 5)
    lx = x.shape[-2]
    stacked = np.concatenate(convs, axis=-2)
    offsets = np.cumsum([0] + [c.shape[-2] for c in convs[:-1]])
    src2 = np.where(source >= lx, source + offsets[:, None], source).astype(np.int32)
    kw = dict(key_poly=key_poly, key_part=key_part, moduli=primes)
    xd, kd = put(jnp.asarray(x)), put(jnp.asarray(key))
    want = np.asarray(ops.digit_key_product(xd, [put(jnp.asarray(c)) for c in convs], kd, source=source, **kw))
    got = ops.digit_key_product(xd, [put(jnp.asarray(stacked))], kd, source=src2, **kw)
    np.testing.assert_array_equal(np.asarray(got), want)
    bad = src2.copy()
    bad[0, 0] = lx + stacked.shape[-2]
    with pytest.raises(Exception, match="source.*out of range"):
        jax.block_until_ready(ops.digit_key_product(xd, [put(jnp.asarray(stacked))], kd, source=bad, **kw))
