"""Private information retrieval built on the LWE and RLWE layers.

    from jax_fhe.pir import simplepir as sp
    params = sp.make_params(num_records=10_000)                    # D_1 x D_0 = 100 x 100 bytes
    server, hint = sp.server_setup(params, records)                # records: uint8[10000]
    query, secret = sp.client_query(params, [7, 9_999])            # batch of 2
    sp.decode(hint, secret, sp.answer(server, query))              # -> uint8[2, 1]

VIPIR's hintless protocols (ExpPack(S), hybrid, double-packing) are in :mod:`.protocols`:

    from jax_fhe.pir import protocols as pr, ring
    params = pr.paper_params("hybrid", 1)                          # 1 GiB, 4 KiB records
    tables = ring.make_tables(params.ring)
    server = pr.server_setup(params, records, tables)              # hint planes offline
    keys = pr.client_keygen(params, tables)                        # upload keys.public once
    query, secret = pr.client_query(keys, tables, [7, 123])
    pr.decode(keys, tables, secret, pr.answer(server, keys.public, query))

``db_gemm`` is the int8 x uint32 mod 2^32 database product every scalar-HE fold uses;
``modgemm`` the exact mod-q_l batched GEMM of ExpPack; ``ring`` the BFV-style RLWE (p = 2^18);
``exppack`` expansion and packing; ``sharded`` the multi-device server; ``memory`` the
device-memory plan (chunking) of a server at scale.
"""
from . import exppack, memory, modgemm, protocols, ring, simplepir
from .db_gemm import byte_planes, db_gemm

__all__ = ["byte_planes", "db_gemm", "exppack", "memory", "modgemm", "protocols", "ring", "simplepir"]
