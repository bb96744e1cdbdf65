"""Base conversion (fast basis extension) as an XLA FFI primitive."""
from __future__ import annotations

import jax

from ..rns.bconv import BConvTable
from ._checks import as_poly


def bconv(x, table: BConvTable) -> jax.Array:
    """Convert ``x``: uint32[..., Lin, N] (residues mod ``table.src``) to
    uint32[..., Lout, N] (residues mod ``table.dst``):

        out_i = sum_j [x_j (Q/q_j)^-1]_{q_j} (Q/q_j)  mod p_i,   Q = prod(table.src).
    """
    if not isinstance(table, BConvTable):
        raise TypeError(f"bconv: expected a BConvTable (jax_fhe.rns.make_bconv_table), got {type(table).__name__}")
    x = as_poly(x, "bconv")
    lin, lout = len(table.src), len(table.dst)
    if x.shape[-2] != lin:
        raise ValueError(f"bconv: input has {x.shape[-2]} limbs but the table converts from {lin}")
    out = jax.ShapeDtypeStruct(x.shape[:-2] + (lout, x.shape[-1]), x.dtype)
    call = jax.ffi.ffi_call("jax_fhe_bconv", out, vmap_method="expand_dims")
    return call(x, table.in_consts, table.mat, table.out_consts, fold_every=table.fold_every)
