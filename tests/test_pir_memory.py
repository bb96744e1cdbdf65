"""The PIR server's memory plan (jax_fhe.pir.memory) and the chunked DB / hint planes: the plan's
buffer arithmetic against the arrays a toy server really holds and produces, chunked builds
bit-identical to whole ones, and clear errors when nothing fits."""
import os
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jax_fhe
from jax_fhe.lwe import LWE_TOY
from jax_fhe.pir import exppack as ep
from jax_fhe.pir import memory
from jax_fhe.pir import protocols as pr
from jax_fhe.pir import ring
from jax_fhe.rns import HostRandom

GIB = 1 << 30
ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def toy_tables():
    return ring.make_tables(ring.RING_TOY)


def _records(params, rng):
    recs = np.frombuffer(rng.bytes(params.num_records * params.record_bytes), np.uint8)
    return recs.reshape(params.num_records, params.record_bytes)


def _nbytes(tree):
    return sum(x.size * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


@pytest.mark.parametrize("protocol", ["hybrid", "double"])
def test_plan_buffers_match_arrays(toy_tables, protocol):
    """Every exact term of the plan equals the bytes of the array it stands for (held arrays
    measured on a chunked toy server; stage outputs by eval_shape of the real stage functions)."""
    rng = HostRandom.insecure_deterministic(4)
    params = pr.make_params(protocol, blocks=4, cols=8, lwe=LWE_TOY, ring=ring.RING_TOY, rng=rng)
    chunking = pr.Chunking(db_chunks=2, plane_chunks=2, expand_stream=2, stream=1, pack_temp_bytes=1)
    server = pr.server_setup(params, _records(params, rng), toy_tables, chunking=chunking, progress=False)
    keys = pr.client_keygen(params, toy_tables, rng)
    batch = 3
    query, _ = pr.client_query(keys, toy_tables, [0, 1, 2], rng)
    p = memory.estimate(params, batch, chunking)
    assert isinstance(server.db, tuple) and len(server.db) == 2 and len(server.planes) == 2
    assert p.held["db"] == _nbytes(server.db) == params.db_bytes
    assert p.held["planes"] == _nbytes(server.planes)
    assert p.held["keys"] == _nbytes(keys.public)
    assert _nbytes(toy_tables) <= p.held["tables"] < 8 * _nbytes(toy_tables)
    assert p.query["queries"] == _nbytes(query)
    y = jax.eval_shape(pr.first_fold, server, query)
    expanded = jax.eval_shape(lambda s, k, q: pr.expand_query(s, k, q, 2), server, keys.public, query)
    packed = jax.eval_shape(lambda s, e, yy: pr.pack_first(s, e, yy, 1), server, expanded, y)
    ans = jax.eval_shape(lambda s, k, q: pr.answer(s, k, q, chunking=chunking).ct, server, keys.public, query)
    assert p.stages["first fold"]["y"] == _nbytes(y)
    assert p.stages["expansion"]["expanded"] == _nbytes(expanded)
    assert p.stages["packing"]["packed"] == _nbytes(packed)
    assert p.query["answers"] == _nbytes(ans)
    # pack bound of 1 byte: one query per group in each of the 2 plane chunks, all alive at once
    per_query = 32 * (params.ring.n // 2) * params.ring.limbs * 4 * params.blocks
    assert p.stages["packing"]["products"] == 2 * per_query
    assert p.autotune["fold"] >= _nbytes(server.db[0]) and p.autotune["pack"] >= _nbytes(server.planes[0])
    assert p.peak_bytes == (p.held_bytes + sum(p.query.values()) + memory.RESERVE_BYTES
                            + max(max(p.autotune.values()), max(sum(v.values()) for v in p.stages.values())))


def test_chunked_build_bit_identical(toy_tables):
    """DB and hint planes built in chunks (from host records and from a row callable) equal the
    whole build byte for byte; the chunked first fold and chunked packing equal the whole ones."""
    rng = HostRandom.insecure_deterministic(6)
    params = pr.make_params("hybrid", blocks=4, cols=8, lwe=LWE_TOY, ring=ring.RING_TOY, rng=rng)
    recs = _records(params, rng)
    whole = pr.server_setup(params, recs, toy_tables, progress=False)
    enc = pr.encode_database(params, recs)
    for source in (recs, lambda r0, r1: enc[r0:r1]):
        ch = pr.server_setup(params, source, toy_tables, chunking=pr.Chunking(db_chunks=4, plane_chunks=4),
                             progress=False, blocks_per_step=1)
        np.testing.assert_array_equal(np.concatenate([np.asarray(c) for c in ch.db]), np.asarray(whole.db))
        np.testing.assert_array_equal(np.concatenate([np.asarray(c) for c in ch.planes]), np.asarray(whole.planes))
    keys = pr.client_keygen(params, toy_tables, rng)
    query, _ = pr.client_query(keys, toy_tables, [0, params.num_records - 1], rng)
    np.testing.assert_array_equal(np.asarray(pr.first_fold(ch, query)), np.asarray(pr.first_fold(whole, query)))
    # packing with plane chunks vs whole planes, on random special ciphertexts (no expansion)
    r = np.random.default_rng(1)
    q = np.array(params.ring.primes, dtype=np.uint64)[:, None]
    special = r.integers(0, 1 << 29, size=(2, params.lwe.n, 2, params.ring.limbs, params.ring.n), dtype=np.uint64) % q
    special = jnp.asarray(special.astype(np.uint32))
    y = jnp.asarray(r.integers(0, 1 << 32, size=(2, params.rows), dtype=np.uint64).astype(np.uint32))
    np.testing.assert_array_equal(np.asarray(ep.pack(ch.planes, special, y, toy_tables)),
                                  np.asarray(ep.pack(whole.planes, special, y, toy_tables)))
    # exppack rows (records are columns) encode by row range too
    pe = pr.make_params("exppack", blocks=2, cols=8, lwe=LWE_TOY, ring=ring.RING_TOY, rng=rng)
    re_ = _records(pe, rng)[:5]
    full = pr.encode_database(pe, re_)
    np.testing.assert_array_equal(np.concatenate([pr.encode_rows(pe, re_, r0, r0 + 512)
                                                  for r0 in range(0, pe.rows, 512)]), full)


def test_plan_fits_and_refuses():
    """Paper sizes: the plan fits the documented configurations within JAX's default 75% of the
    device and refuses, before allocating, what cannot fit, naming what would."""
    rng = HostRandom.insecure_deterministic(0)
    h100, h200 = int(0.75 * 79.6 * GIB), int(0.75 * 140.4 * GIB)
    hyb16, hyb64 = pr.paper_params("hybrid", 16, rng=rng), pr.paper_params("hybrid", 64, rng=rng)
    p = memory.plan(hyb16, 32, memory_bytes=h100)
    assert p.fits and p.peak_bytes <= h100 and p.setup_peak_bytes <= h100
    assert p.held["db"] == 16 * GIB and p.held["planes"] == 15 * GIB
    p = memory.plan(hyb64, 32, memory_bytes=h200)
    assert p.fits and p.chunking.db_chunks > 1          # the autotuner must not copy 64 GiB
    assert p.autotune["fold"] < 8 * GIB
    p2 = memory.plan(hyb64, 32, devices=2, memory_bytes=h100)
    assert p2.held["db"] == 32 * GIB and p2.fits
    with pytest.raises(MemoryError, match=r"needs .* GiB per device.*would fit: batch 32 on 2 devices"):
        memory.plan(hyb64, 32, memory_bytes=h100)
    with pytest.raises(MemoryError, match="with the given chunking"):
        memory.plan(hyb16, 32, memory_bytes=h100, chunking=pr.Chunking(expand_stream=32, pack_temp_bytes=48 * GIB))
    # a smaller budget costs streams/chunks, never correctness of the arithmetic
    tight = memory.plan(hyb16, 32, memory_bytes=48 * GIB)
    assert tight.fits and tight.chunking.expand_stream < 32
    assert memory.plan(hyb16, 32).memory_bytes is None       # no budget: not fitted
    for bad in (dict(devices=3), dict(devices=0)):
        with pytest.raises(ValueError):
            memory.plan(hyb16, 32, **bad)
    with pytest.raises(ValueError, match="batch"):
        memory.plan(hyb16, 0)
    with pytest.raises(TypeError):
        memory.plan("hybrid", 32)
    with pytest.raises(ValueError, match="Chunking"):
        pr.Chunking(db_chunks=0)


def test_setup_rejects_bad_chunking(toy_tables):
    rng = HostRandom.insecure_deterministic(8)
    params = pr.make_params("hybrid", blocks=4, cols=8, lwe=LWE_TOY, ring=ring.RING_TOY, rng=rng)
    recs = _records(params, rng)
    with pytest.raises(ValueError, match="do not split into 3 DB chunks"):
        pr.server_setup(params, recs, toy_tables, chunking=pr.Chunking(db_chunks=3))
    with pytest.raises(ValueError, match="plane chunks"):
        pr.server_setup(params, recs, toy_tables, chunking=pr.Chunking(plane_chunks=3))
    with pytest.raises(ValueError, match="must be int8"):
        pr.server_setup(params, lambda r0, r1: np.zeros((r1 - r0, 4), np.int8), toy_tables)


def test_bench_plan_only():
    """bench_pir.py --plan-only prints the plans without touching a device; a configuration that
    cannot fit exits 2 with the plan's message (64 GiB, batch 32 in 60 GiB) while the others print."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")   # jax_fhe as this process imports it (installed in CI)
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_pir.py"), "--db-gib", "16", "64", "--protocols", "hybrid",
           "--batches", "32", "--plan-only", "--memory-gib", "60"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT / "benchmarks")
    assert "DB 16 GiB" in out.stdout and "(fits with" in out.stdout, out.stdout
    assert out.returncode == 2 and "would fit: batch 32 on 2 devices" in out.stderr, out.stderr


SHARDED_CHUNKED_CHILD = r"""
import jax
import numpy as np

from jax_fhe.lwe import LWE_TOY
from jax_fhe.pir import protocols as pr
from jax_fhe.pir import ring, sharded
from jax_fhe.rns import HostRandom

assert len(jax.devices()) == 2, jax.devices()
rng = HostRandom.insecure_deterministic(21)
tables = ring.make_tables(ring.RING_TOY)
mesh = sharded.make_mesh()
chunking = pr.Chunking(db_chunks=2, plane_chunks=2, expand_stream=1, stream=1)
for protocol in pr.PROTOCOLS:
    params = pr.make_params(protocol, blocks=4, cols=8, lwe=LWE_TOY, ring=ring.RING_TOY, rng=rng)
    recs = np.frombuffer(rng.bytes(params.num_records * params.record_bytes), np.uint8)
    recs = recs.reshape(params.num_records, params.record_bytes)
    one_srv = pr.server_setup(params, recs, tables, progress=False)
    keys = pr.client_keygen(params, tables, rng)
    idx = [0, params.num_records - 1, 5]
    query, secret = pr.client_query(keys, tables, idx, rng)
    one = pr.answer(one_srv, keys.public, query)
    srv = sharded.server_setup(params, recs, tables, mesh, chunking=chunking, progress=False)
    held = [len(c.addressable_shards) for c in srv.db]
    many = sharded.answer(srv, keys.public, query, mesh, chunking=chunking)
    same = np.array_equal(np.asarray(one.ct), np.asarray(many.ct))
    ok = np.array_equal(pr.decode(keys, tables, secret, many), recs[idx])
    print(protocol, held, "IDENTICAL" if same and ok else "DIFFERENT")
"""


@pytest.mark.slow
def test_sharded_chunked_build_matches_single_device():
    """2 host devices: the server built shard by shard in chunks answers bit-identically to the
    whole single-device server (the chunked rows are reordered after the all-to-all)."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", SHARDED_CHUNKED_CHILD], capture_output=True, text=True,
                         timeout=900, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("IDENTICAL") == 3, out.stdout


@pytest.mark.gpu
def test_sharded_chunked_build_matches_single_device_on_two_gpus():
    """The same check on two GPUs of one host: the all-to-all runs over NCCL and the answers
    must still equal the one-GPU server's bit for bit."""
    if not jax_fhe.built_with_cuda() or not jax_fhe.gpu_available() or len(jax.devices("gpu")) < 2:
        pytest.skip("needs jax_fhe's CUDA kernels and two visible GPUs")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=os.environ.get("CUDA_VISIBLE_DEVICES", "0,1"),
               XLA_PYTHON_CLIENT_PREALLOCATE="false")
    env.pop("JAX_PLATFORMS", None)
    child = SHARDED_CHUNKED_CHILD.replace("jax.devices()", "jax.devices('gpu')[:2]")
    child = child.replace("sharded.make_mesh()", "sharded.make_mesh(jax.devices('gpu')[:2])")
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("IDENTICAL") == 3, out.stdout


@pytest.mark.slow
@pytest.mark.parametrize("protocol", pr.PROTOCOLS)
def test_chunked_answers_bit_identical(device, put, toy_tables, protocol):
    """Whole answers: a server held in chunks, answered with small streams and packing groups,
    gives the unchunked server's ciphertexts bit for bit, and they decode."""
    rng = HostRandom.insecure_deterministic(12)
    params = pr.make_params(protocol, blocks=4, cols=8, lwe=LWE_TOY, ring=ring.RING_TOY, rng=rng)
    recs = _records(params, rng)
    t = put(toy_tables)
    whole = put(pr.server_setup(params, recs, t, progress=False))
    chunking = pr.Chunking(db_chunks=2, plane_chunks=4, expand_stream=1, stream=1, pack_temp_bytes=1)
    ch = put(pr.server_setup(params, recs, t, chunking=chunking, progress=False))
    keys = pr.client_keygen(params, toy_tables, rng)
    idx = [0, 5, params.num_records - 1]
    query, secret = pr.client_query(keys, toy_tables, idx, rng)
    a1 = pr.answer(whole, put(keys.public), put(query))
    a2 = pr.answer(ch, put(keys.public), put(query), chunking=chunking)
    np.testing.assert_array_equal(np.asarray(a2.ct), np.asarray(a1.ct))
    np.testing.assert_array_equal(pr.decode(keys, toy_tables, secret, a2), recs[idx])
