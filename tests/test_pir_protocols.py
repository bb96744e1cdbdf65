"""VIPIR protocols end to end: ExpPack(S), hybrid, double-packing; Table 1 sizes; noise per
stage; bad inputs; the multi-device server."""
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe.lwe import LWE_TOY
from jax_fhe.pir import protocols as pr
from jax_fhe.pir import ring
from jax_fhe.pir.db_gemm import db_gemm
from jax_fhe.rns import HostRandom

SHAPES = {"exppack": (2, 8), "hybrid": (4, 6), "double": (4, 6)}     # (blocks, D_0), toy ring


@pytest.fixture(scope="module")
def toy_tables():
    return ring.make_tables(ring.RING_TOY)


def _instance(protocol, tables, seed, *, lwe=LWE_TOY, rp=ring.RING_TOY, shape=None):
    rng = HostRandom.insecure_deterministic(seed)
    blocks, cols = shape or SHAPES[protocol]
    params = pr.make_params(protocol, blocks=blocks, cols=cols, lwe=lwe, ring=rp, rng=rng)
    recs = np.frombuffer(rng.bytes(params.num_records * params.record_bytes), np.uint8)
    recs = recs.reshape(params.num_records, params.record_bytes)
    server = pr.server_setup(params, recs, tables)
    keys = pr.client_keygen(params, tables, rng)
    return params, recs, server, keys, rng


def _boundary_indices(params, rng, batch):
    c, total = params.cols, params.num_records
    edge = [0, total - 1, c - 1, c, total - c] if params.protocol != "exppack" else [0, total - 1]
    extra = [int(x) for x in rng.uint64((batch,)) % np.uint64(total)]
    return (edge + extra)[:batch]


@pytest.mark.parametrize("protocol", pr.PROTOCOLS)
@pytest.mark.parametrize("batch", [1, 5])
def test_retrieval(device, put, toy_tables, protocol, batch):
    params, recs, server, keys, rng = _instance(protocol, toy_tables, 10 + batch)
    idx = _boundary_indices(params, rng, batch)
    query, secret = pr.client_query(keys, toy_tables, idx, rng)
    ans = pr.answer(put(server), put(keys.public), put(query))
    assert ans.ct.shape == (batch, params.response_cts, 2, params.ring.n)
    assert ans.ct.nbytes == batch * params.communication()["response"]
    np.testing.assert_array_equal(pr.decode(keys, toy_tables, secret, ans), recs[idx])


def test_communication_matches_table1():
    """VIPIR Table 1 (communication per query, KiB) and the reusable key sizes."""
    table = {"hybrid": [132, 144, 192, 384], "double": [357, 369, 417, 609],
             "exppack": [480, 864, 1632, 3168]}
    rng = HostRandom.insecure_deterministic(0)
    for protocol, kib in table.items():
        for gib, want in zip((1, 4, 16, 64), kib):
            c = pr.paper_params(protocol, gib, rng=rng).communication()
            assert c["total"] == want * 1024, (protocol, gib, c)
            assert c["ct_exppack"] == 96 * 1024
            assert c["record"] == (4096 if protocol != "exppack" else (32 << 10) << ((gib.bit_length() - 1) // 2))
            keys = 6240 * 1024 if protocol == "hybrid" else 5280 * 1024        # 6.09 / 5.16 MiB
            assert c["reusable_keys"] == keys
    p = pr.paper_params("hybrid", 16, rng=rng)
    assert (p.blocks, p.cols, p.levels, p.db_bytes) == (256, 1 << 14, 11, 16 << 30)


def test_bad_inputs(toy_tables):
    params, recs, server, keys, rng = _instance("hybrid", toy_tables, 3)
    with pytest.raises(ValueError, match="out of range"):
        pr.client_query(keys, toy_tables, [params.num_records], rng)
    with pytest.raises(ValueError, match="out of range"):
        pr.client_query(keys, toy_tables, -1, rng)
    with pytest.raises(TypeError, match="integers"):
        pr.client_query(keys, toy_tables, [1.5], rng)
    with pytest.raises(ValueError, match="non-empty"):
        pr.client_query(keys, toy_tables, [], rng)
    with pytest.raises(ValueError, match="power of two"):
        pr.make_params("hybrid", blocks=3, cols=4, lwe=LWE_TOY, ring=ring.RING_TOY, rng=rng)
    with pytest.raises(ValueError, match="protocol"):
        pr.make_params("spiral", blocks=2, cols=4, lwe=LWE_TOY, ring=ring.RING_TOY, rng=rng)
    with pytest.raises(ValueError, match="tables are for"):
        pr.client_query(keys, ring.make_tables(ring.RING_N4096), [0], rng)
    with pytest.raises(ValueError, match="record_bytes|records must be"):
        pr.server_setup(params, recs[:, :5], toy_tables)
    query, secret = pr.client_query(keys, toy_tables, [1, 2], rng)
    # a query for other public seeds (another server's parameters)
    other, _, _, okeys, _ = _instance("hybrid", toy_tables, 4)
    oq, _ = pr.client_query(okeys, toy_tables, [1], rng)
    with pytest.raises(ValueError, match="are for"):
        pr.answer(server, keys.public, oq)
    with pytest.raises(ValueError, match="are for"):
        pr.answer(server, okeys.public, query)
    bad = pr.Query(b=query.b[:, :-1], ct=query.ct, b2=None, params=params)
    with pytest.raises(ValueError, match="query.b must be"):
        pr.answer(server, keys.public, bad)
    bad = pr.Query(b=query.b, ct=query.ct[:1], b2=None, params=params)
    with pytest.raises(ValueError, match="query.ct must be"):
        pr.answer(server, keys.public, bad)
    with pytest.raises(TypeError, match="PublicKeys"):
        pr.answer(server, keys, query)
    ans = pr.answer(server, keys.public, query)
    with pytest.raises(ValueError, match="answer must be"):
        pr.decode(keys, toy_tables, secret, pr.Answer(ct=ans.ct[:1], params=params))


def _phase_err(key, cts, tables, val):
    """Centered (phase - Delta * val) mod Q for NTT-domain ciphertexts [..., 2, L, N]."""
    rp = tables.params
    ph = ring.phase_int(key, cts, tables)
    err = (ph - np.asarray(val).astype(object) * rp.delta) % rp.q
    return np.where(err > rp.q // 2, err - rp.q, err)


def test_hybrid_noise_per_stage(device, put):
    """Full-size ring and LWE (N = 4096, n = 1280) on a small DB (4 blocks x 4 columns):
    noise at every stage boundary, against Delta = 2^69 (decryption needs < Delta / 2)."""
    rp = ring.RING_N4096
    tables = ring.make_tables(rp)
    from jax_fhe.lwe import LWE_N1280
    params, recs, server, keys, rng = _instance("hybrid", tables, 21, lwe=LWE_N1280, rp=rp, shape=(4, 4))
    idx = [2 * params.cols + 3]                                        # block 2, column 3
    query, secret = pr.client_query(keys, tables, idx, rng)
    server, pub, q = put(server), put(keys.public), put(query)
    key = keys.ring_key
    stages = jax.jit(lambda s, k, q: (pr.first_fold(s, q), pr.expand_query(s, k, q)))
    y, expanded = stages(server, pub, q)
    packed = jax.jit(pr.pack_first)(server, expanded, y)
    folded = jax.jit(pr.hybrid_fold)(server, pub, expanded, packed)
    # expansion: special leaves encrypt Delta s_i; selector leaves bit * 2^(9 j)
    pick = [0, 1, 1279]
    want = np.zeros((1, 3, rp.n), dtype=object)
    want[0, :, 0] = np.asarray(secret.s)[0, pick].astype(object) * rp.delta
    e_exp = ring.noise_log2(ring.phase_int(key, expanded[:, pick], tables) - want)
    assert e_exp < 39, e_exp                     # measured 2^35.2 (2^36.9 over 20 leaves)
    # packing: plaintext = LWE phase vector mod 2^18 (recomputed from the DB and A)
    a = pr.public_matrix(params.a_seed, params.cols, params.lwe.n)
    r18 = lambda x: ((np.asarray(x).astype(np.int64) + (1 << 13)) >> 14) % (1 << 18)  # noqa: E731
    h18 = r18(db_gemm(server.db, a))
    val = (r18(y) + (h18 @ np.asarray(secret.s).T.astype(np.int64)).T) % (1 << 18)   # [1, rows]
    val = val.reshape(1, params.blocks, rp.n)
    e_pack = ring.noise_log2(_phase_err(key, packed, tables, val))
    assert e_pack < 63, e_pack                   # measured 2^59.8; Delta / 4 = 2^67
    e_fold = ring.noise_log2(_phase_err(key, folded, tables, val[:, 2:3]))
    assert e_fold < 64, e_fold                   # measured 2^59.75 after 2 CMUX levels
    # mod switch to q_0: noise vs Delta_0 = 2047
    sw = ring.mod_switch(folded, tables)
    ph0 = np.asarray(ring.phase_switched(key, sw, tables)).astype(np.int64)
    q0 = rp.primes[0]
    err0 = (ph0 - val[:, 2:3] * rp.delta0 - val[:, 2:3] // rp.p) % q0
    err0 = np.where(err0 > q0 // 2, err0 - q0, err0)
    assert np.abs(err0).max() < rp.delta0 // 4, np.abs(err0).max()    # measured 156 (std ~40)
    np.testing.assert_array_equal(pr.decode(keys, tables, secret, pr.Answer(ct=sw, params=params)), recs[idx])


# Run in a subprocess with 4 host devices: the sharded server's answers must equal the
# single-device answers bit for bit, and decode.
SHARDED_CHILD = r"""
import jax
import numpy as np

from jax_fhe.lwe import LWE_TOY
from jax_fhe.pir import protocols as pr
from jax_fhe.pir import ring, sharded
from jax_fhe.rns import HostRandom

assert len(jax.devices()) == 4, jax.devices()
rng = HostRandom.insecure_deterministic(17)
tables = ring.make_tables(ring.RING_TOY)
mesh = sharded.make_mesh()
for protocol in pr.PROTOCOLS:
    params = pr.make_params(protocol, blocks=4, cols=8, lwe=LWE_TOY, ring=ring.RING_TOY, rng=rng)
    recs = np.frombuffer(rng.bytes(params.num_records * params.record_bytes), np.uint8)
    recs = recs.reshape(params.num_records, params.record_bytes)
    server = pr.server_setup(params, recs, tables)
    keys = pr.client_keygen(params, tables, rng)
    idx = [0, params.num_records - 1, 5]                               # B = 3: padded to 4
    query, secret = pr.client_query(keys, tables, idx, rng)
    one = pr.answer(server, keys.public, query)
    many = sharded.answer(sharded.shard_server(server, mesh), keys.public, query, mesh)
    same = np.array_equal(np.asarray(one.ct), np.asarray(many.ct))
    ok = np.array_equal(pr.decode(keys, tables, secret, many), recs[idx])
    print(protocol, "IDENTICAL" if same and ok else "DIFFERENT")
"""


def test_sharded_matches_single_device():
    """4 host devices (XLA_FLAGS set before jax is imported, so in a subprocess)."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", SHARDED_CHILD], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("IDENTICAL") == 3, out.stdout


@pytest.mark.slow
@pytest.mark.parametrize("protocol", pr.PROTOCOLS)
def test_full_size_1gib(device, put, protocol):
    """The paper's 1 GiB layout (N = 4096, n = 1280), batch 4, on the GPU machine."""
    tables = ring.make_tables(ring.RING_N4096)
    rng = HostRandom.insecure_deterministic(99)
    params = pr.paper_params(protocol, 1, rng=rng)
    recs = np.frombuffer(rng.bytes(params.num_records * params.record_bytes), np.uint8)
    recs = recs.reshape(params.num_records, params.record_bytes)
    server = put(pr.server_setup(params, recs, put(tables)))
    keys = pr.client_keygen(params, tables, rng)
    idx = _boundary_indices(params, rng, 4)
    query, secret = pr.client_query(keys, tables, idx, rng)
    ans = pr.answer(server, put(keys.public), put(query))
    np.testing.assert_array_equal(pr.decode(keys, tables, secret, ans), recs[idx])


def test_pack_query_groups_exact(device, put, toy_tables):
    """The shared-hint packing GEMM cut into groups of queries (small max_temp_bytes: lax.map
    over groups, the batch padded when the groups do not divide it) is bit-identical to one
    GEMM for the batch, and extra expanded slots past n (the hybrid's selector slots) are
    ignored."""
    from jax_fhe.pir import exppack as ep
    rp, n, blocks, bsz = ring.RING_TOY, 12, 2, 5
    rng = np.random.default_rng(3)
    h_raw = rng.integers(0, 1 << 32, size=(blocks * rp.n, n), dtype=np.uint64).astype(np.uint32)
    planes = jax.jit(ep.hint_planes)(put(jnp.asarray(h_raw)), put(toy_tables))
    q = np.array(rp.primes, dtype=np.uint64)[:, None]
    special = (rng.integers(0, 1 << 29, size=(bsz, n + 3, 2, rp.limbs, rp.n), dtype=np.uint64) % q)
    special = put(jnp.asarray(special.astype(np.uint32)))
    y = put(jnp.asarray(rng.integers(0, 1 << 32, size=(bsz, blocks * rp.n), dtype=np.uint64).astype(np.uint32)))
    per_query = 32 * rp.n * rp.limbs * 4 * blocks                    # int32 products of one query
    pack = jax.jit(ep.pack, static_argnames="max_temp_bytes")
    whole = np.asarray(pack(planes, special, y, put(toy_tables), max_temp_bytes=bsz * per_query))
    assert whole.shape == (bsz, blocks, 2, rp.limbs, rp.n)
    for budget in (per_query, 2 * per_query + 1, 3 * per_query):     # groups of 1, 2 (+1 pad), 3 (+1 pad)
        grouped = pack(planes, special, y, put(toy_tables), max_temp_bytes=budget)
        np.testing.assert_array_equal(np.asarray(grouped), whole)
    np.testing.assert_array_equal(np.asarray(pack(planes, special[:, :n], y, put(toy_tables))), whole)


def test_fused_gemm_retrieval(device, put, toy_tables, monkeypatch):
    """With the FFI modular GEMM (modgemm.FUSED_DEFAULT, read at trace time) the hybrid and
    double-packing protocols still retrieve the records exactly."""
    from jax_fhe.pir import modgemm
    monkeypatch.setattr(modgemm, "FUSED_DEFAULT", True)
    jax.clear_caches()  # traces cached with the XLA path must not be reused (nor kept after)
    try:
        _fused_retrieval(put, toy_tables)
    finally:
        jax.clear_caches()


def _fused_retrieval(put, toy_tables):
    rng = HostRandom.insecure_deterministic(5)
    for protocol in ("hybrid", "double"):
        params = pr.make_params(protocol, blocks=4, cols=64, lwe=LWE_TOY, ring=ring.RING_TOY, rng=rng)
        recs = np.frombuffer(rng.bytes(params.num_records * params.record_bytes), np.uint8)
        recs = recs.reshape(params.num_records, params.record_bytes)
        server = put(pr.server_setup(params, recs, put(toy_tables)))
        keys = pr.client_keygen(params, toy_tables, rng)
        idx = [0, params.num_records - 1, 3]
        query, secret = pr.client_query(keys, toy_tables, idx, rng)
        ans = pr.answer(server, put(keys.public), put(query))
        np.testing.assert_array_equal(pr.decode(keys, toy_tables, secret, ans), recs[idx])
