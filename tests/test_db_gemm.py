"""The int8 x uint32 mod 2^32 DB GEMM against a uint64 numpy reference."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe.pir import byte_planes, db_gemm

EDGE_BYTES = np.array([0x00, 0x01, 0x7F, 0x80, 0x81, 0xFF], dtype=np.uint8)
EDGE_WORDS = np.array([0x00000000, 0xFFFFFFFF, 0x80808080, 0x7F7F7F7F, 0x7F7F7F80, 0x80000000,
                       0x7FFFFFFF, 0x000000FF, 0x0000FF80, 0xFF00FF00, 0x00800080, 0x01010101],
                      dtype=np.uint32)


def _gpu_or_skip():
    try:
        return jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("no GPU visible to JAX")


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request):
    """Runs the test with this device as JAX's default. Unlike conftest's ``device`` this does
    not need jax_fhe's CUDA kernels: db_gemm is plain jnp, so any visible GPU will do."""
    dev = jax.devices("cpu")[0] if request.param == "cpu" else _gpu_or_skip()
    with jax.default_device(dev):
        yield dev


def reference(db, query, signed=True):
    """Obviously-correct uint64 product: entries as int8 (or uint8) values, mod 2^32."""
    d = db.view(np.int8 if signed else np.uint8).astype(np.int64).astype(np.uint64)
    q = query.astype(np.uint64)
    if q.ndim == 1:
        return ((d @ q[:, None]) & np.uint64(0xFFFFFFFF)).astype(np.uint32)[:, 0]
    return ((d @ q) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def random_db(rng, m, k, edge_fraction=0.5):
    db = rng.integers(0, 256, (m, k)).astype(np.uint8)
    mask = rng.random((m, k)) < edge_fraction
    db[mask] = rng.choice(EDGE_BYTES, mask.sum())
    return db


def random_query(rng, k, b, edge_fraction=0.5):
    q = rng.integers(0, 1 << 32, (k, b), dtype=np.uint64).astype(np.uint32)
    mask = rng.random((k, b)) < edge_fraction
    q[mask] = rng.choice(EDGE_WORDS, mask.sum())
    return q


def test_byte_planes_recombine_to_the_word():
    rng = np.random.default_rng(0)
    x = np.concatenate([EDGE_WORDS, rng.integers(0, 1 << 32, 500, dtype=np.uint64).astype(np.uint32)])
    planes = np.asarray(byte_planes(jnp.asarray(x))).astype(np.int64)
    assert planes.shape == (4, x.size)
    assert planes.min() >= -128 and planes.max() <= 127
    recombined = sum(planes[i] << (8 * i) for i in range(4)) % (1 << 32)
    np.testing.assert_array_equal(recombined, x.astype(np.int64))


@pytest.mark.parametrize("b", [1, 2, 32])
@pytest.mark.parametrize("signed", [True, False])
def test_matches_reference_with_edge_values(device, b, signed):
    rng = np.random.default_rng(b + 10 * signed)
    db = random_db(rng, 67, 300)
    q = random_query(rng, 300, b)
    for dtype in (np.int8, np.uint8):
        out = db_gemm(jnp.asarray(db.view(dtype)), jnp.asarray(q), db_signed=signed)
        assert out.dtype == jnp.uint32 and out.shape == (67, b)
        np.testing.assert_array_equal(np.asarray(out), reference(db, q, signed))


def test_every_edge_byte_pair(device):
    # All 256 x 256 (db byte, query byte) products in each of the four byte positions.
    db = np.arange(256, dtype=np.uint8)[:, None]                         # M = 256, K = 1
    q = (np.arange(256, dtype=np.uint32)[None, :, None] << (8 * np.arange(4, dtype=np.uint32))
         ).reshape(1, -1)                                                # B = 1024
    np.testing.assert_array_equal(np.asarray(db_gemm(jnp.asarray(db), jnp.asarray(q))), reference(db, q))


@pytest.mark.parametrize("method", ["gemv", "gemm"])
def test_batch_one_paths(device, method):
    rng = np.random.default_rng(3)
    db = random_db(rng, 50, 1000)
    q = random_query(rng, 1000, 1)
    want = reference(db, q)
    np.testing.assert_array_equal(np.asarray(db_gemm(jnp.asarray(db), jnp.asarray(q), method=method)), want)
    vec = db_gemm(jnp.asarray(db), jnp.asarray(q[:, 0]), method=method)
    assert vec.shape == (50,)
    np.testing.assert_array_equal(np.asarray(vec), want[:, 0])


@pytest.mark.parametrize("db_byte,word", [(0x7F, 0x7F7F7F7F), (0x80, 0x7F7F7F80), (0x80, 0x7F7F7F7F),
                                          (0xFF, 0xFFFFFFFF), (0x7F, 0x80808080)],
                         ids=lambda v: hex(v))
def test_k_2_18_accumulator_wraparound(device, db_byte, word):
    k = 1 << 18
    rng = np.random.default_rng(db_byte ^ word)
    db = np.full((3, k), db_byte, dtype=np.uint8)
    db[2] = random_db(rng, 1, k)[0]
    q = np.full((k, 2), word, dtype=np.uint32)
    q[:, 1] = random_query(rng, k, 1)[:, 0]
    # The test is only meaningful if some int32 plane accumulator really overflows.
    planes = np.asarray(byte_planes(jnp.asarray(q[:, 0]))).astype(np.int64)
    plane_sums = db.view(np.int8).astype(np.int64) @ planes.T
    if (db_byte, word) in ((0x7F, 0x7F7F7F7F), (0x80, 0x7F7F7F80)):
        assert np.abs(plane_sums).max() >= 1 << 31
    want = reference(db, q)
    for method in ("gemm", "auto"):
        np.testing.assert_array_equal(np.asarray(db_gemm(jnp.asarray(db), jnp.asarray(q), method=method)), want)
    np.testing.assert_array_equal(np.asarray(db_gemm(jnp.asarray(db), jnp.asarray(q[:, 0]))), want[:, 0])


@pytest.mark.parametrize("k", [1, 2, 3, 5, 15, 33, 55, 63, 64, 65])
def test_small_and_unaligned_k(device, k):
    # Regression: XLA's GPU int8 GEMM gave wrong sums for K < 64 with K % 4 != 0; db_gemm pads K.
    rng = np.random.default_rng(k)
    db = random_db(rng, 57, k)
    q = random_query(rng, k, 32)
    np.testing.assert_array_equal(np.asarray(db_gemm(jnp.asarray(db), jnp.asarray(q))), reference(db, q))


def test_jit_equals_eager_and_vmap_equals_loop():
    rng = np.random.default_rng(4)
    db = jnp.asarray(random_db(rng, 40, 128))
    q = jnp.asarray(random_query(rng, 128, 6))
    jitted = jax.jit(db_gemm, static_argnames=("method", "db_signed"))(db, q)
    with jax.disable_jit():
        eager = db_gemm(db, q)
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(eager))
    # vmap over single-vector queries equals the columns of the batched GEMM, on both paths.
    for method in ("gemv", "gemm"):
        mapped = jax.vmap(lambda v: db_gemm(db, v, method=method), in_axes=1, out_axes=1)(q)
        np.testing.assert_array_equal(np.asarray(mapped), np.asarray(jitted))


def test_bad_inputs_raise():
    db = jnp.zeros((4, 8), jnp.int8)
    q = jnp.zeros((8, 2), jnp.uint32)
    with pytest.raises(TypeError, match="db must be int8 or uint8"):
        db_gemm(db.astype(jnp.int32), q)
    with pytest.raises(TypeError, match="query must be uint32"):
        db_gemm(db, q.astype(jnp.int32))
    with pytest.raises(TypeError, match="array"):
        db_gemm([[1, 2]], q)
    with pytest.raises(ValueError, match="K=7 rows but db has K=8"):
        db_gemm(db, q[:7])
    with pytest.raises(ValueError, match=r"\[M, K\]"):
        db_gemm(db[0], q)
    with pytest.raises(ValueError, match=r"\[K, B\] or \[K\]"):
        db_gemm(db, q[None])
    with pytest.raises(ValueError, match="method"):
        db_gemm(db, q, method="tensor")
    with pytest.raises(ValueError, match="B = 1"):
        db_gemm(db, q, method="gemv")
