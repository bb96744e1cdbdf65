"""Run by test_pir_protocols.test_sharded_matches_single_device with 4 host devices: the
sharded server's answers must equal the single-device answers bit for bit, and decode."""
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
