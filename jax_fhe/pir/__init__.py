"""Private information retrieval built on the LWE layer.

    from jax_fhe.pir import simplepir as sp
    params = sp.make_params(num_records=10_000)                    # D_1 x D_0 = 100 x 100 bytes
    server, hint = sp.server_setup(params, records)                # records: uint8[10000]
    query, secret = sp.client_query(params, [7, 9_999])            # batch of 2
    sp.decode(hint, secret, sp.answer(server, query))              # -> uint8[2, 1]

``db_gemm`` is the int8 x uint32 mod 2^32 database product every scalar-HE fold uses.
"""
from . import simplepir
from .db_gemm import byte_planes, db_gemm

__all__ = ["byte_planes", "db_gemm", "simplepir"]
