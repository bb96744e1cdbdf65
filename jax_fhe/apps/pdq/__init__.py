"""Private dataset queries (CAT's PDQ) over an encrypted table, as jitted CKKS programs.

    from jax_fhe.apps import pdq
    client = pdq.Client(ctx, rows=1024)                       # the data holder: keys
    table = client.encrypt_table({"a": a, "b": b, "c": c})    # bit planes + values, once
    q = pdq.where((pdq.col("a") <= pdq.col("b")) & (pdq.col("c") != 7)).sum("a")
    cq = pdq.compile_query(q, table, ctx, client.evaluation_keys)  # the server's program
    answer = client.decrypt(pdq.execute(cq, table, client, client.evaluation_keys))

See docs/pdq.md for the layout, the circuits, their depth and error analysis, and the protocol.
"""
from . import circuits, layout, params
from .engine import (Answer, Client, CompiledQuery, EncryptedResult, EncryptedTable, R_BITS,
                     compile_query, execute, reference)
from .layout import BITS, Layout, bit_planes, from_bit_planes, make_layout
from .params import preset
from .query import And, Cmp, Col, Not, Or, Query, Where, col, where

__all__ = ["And", "Answer", "BITS", "Client", "Cmp", "Col", "CompiledQuery", "EncryptedResult",
           "EncryptedTable", "Layout", "Not", "Or", "Query", "R_BITS", "Where", "bit_planes",
           "circuits", "col", "compile_query", "execute", "from_bit_planes", "layout", "make_layout",
           "params", "preset", "reference", "where"]
