"""The key inner product of hybrid key switching as one XLA FFI primitive.

``digit_key_product`` computes, for output rows j and key parts c = 0, 1,

    out[..., c, j, :] = sum_i src_i[..., j, :] * key[key_poly[i, j] + c * key_part, :]  mod p_j

where digit slot i reads row j of its extended (ModUp) digit from ``x`` (the digit's own
limbs: ``source[i, j] < Lx``) or from ``convs[i]`` (row ``source[i, j] - Lx``), so the extended
digits are never assembled and each key polynomial is read once for the whole batch. With
``sub``/``scale`` it also runs ModDown's last step: ``(out - sub) * scale mod p_j``; with
``intt`` its first (the special rows back to the coefficient domain).
:func:`jax_fhe.rlwe.hybrid.key_switch` builds the plan; the semantics are in
``ffi/key_product_args.h``.
"""
from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ._checks import as_context, as_poly, rows_array
from .ntt import lazy_butterflies

MAX_DIGITS = 8
# sources are 8-bit in the kernel's plan: Lx + (conversion rows) must stay below 256
MAX_SOURCE_ROWS = 255


def _transform_rows(spec, r: int, moduli, n: int, what: str = "sub_ntt"):
    """(ctx, rows) of the fused NTT or INTT, checked against the output rows' primes and N."""
    try:
        ctx, rows = spec
    except (TypeError, ValueError):
        raise ValueError(f"digit_key_product: {what} must be a pair (ctx, rows)") from None
    ctx = as_context(ctx, "digit_key_product")
    rows = ctx.rows_for(r, rows)
    if n != ctx.n:
        raise ValueError(f"digit_key_product: data has N={n} but the NTT tables were built for N={ctx.n}")
    if [ctx.primes[i] for i in rows] != [int(m) for m in moduli]:
        raise ValueError("digit_key_product: the NTT rows' primes differ from moduli")
    return ctx, rows


def digit_key_product(x, convs: Sequence, key, *, source, key_poly, key_part: int, moduli,
                      sub=None, scale=None, sub_ntt=None, intt=None) -> jax.Array:
    """Key inner product over digits read in place.

    x:        uint32[B..., Lx, N]     the ciphertext component (each digit's own limbs)
    convs:    D arrays uint32[B..., Lc_i, N], digit i's ModUp conversion (1 <= D <= 8); or
              one array that every digit reads (ModUp's stacked conversions, [B..., D*Lc, N])
    key:      uint32[..., K, N]       the key's K polynomials (leading axes: batch)
    source:   int[D, R]               where digit i's row j comes from (see the module doc)
    key_poly: int[D, R]               flat key polynomial of (i, j) for part 0; part 1 at
                                      ``+ key_part``
    moduli:   int[R]                  the prime of each output row (odd, below 2^31)
    sub:      uint32[B..., 2, R, N]   optional: ModDown's converted special part
    scale:    int[R]                  with ``sub``: P^-1 mod each output prime
    sub_ntt:  (ctx, rows)             optional, with ``sub``: sub is in the coefficient domain;
                                      subtract its forward NTT under the RNS context ``ctx`` at
                                      table rows ``rows`` (whose primes must be ``moduli``). On
                                      the GPU the NTT's second phase and the key product are one
                                      kernel, so NTT(sub) is never written (one
                                      ciphertext, N = 2^15, 2^16; batches run them apart).
    intt:     (ctx, rows)             optional, without ``sub``: return the product's inverse
                                      NTT (coefficient domain) under ``ctx`` at table rows
                                      ``rows`` (primes ``moduli``). On the GPU the INTT's first
                                      phase computes the product, so it is never written (same
                                      cases as ``sub_ntt``).
    Returns uint32[B..., 2, R, N].
    """
    x = as_poly(x, "digit_key_product")
    convs = [as_poly(c, "digit_key_product") for c in convs]
    source = np.asarray(source, dtype=np.int32)
    key_poly = np.asarray(key_poly, dtype=np.int32)
    moduli = np.asarray(moduli, dtype=np.int64)
    # D: one conversion per digit, or one (stacked) conversion that the D rows of source share
    d = len(convs) if len(convs) != 1 or source.ndim != 2 else source.shape[0]
    if not 1 <= d <= MAX_DIGITS:
        raise ValueError(f"digit_key_product: 1 to {MAX_DIGITS} digits, got {d}")
    r = moduli.shape[0] if moduli.ndim == 1 else -1
    if moduli.ndim != 1 or source.shape != (d, r) or key_poly.shape != (d, r):
        raise ValueError(f"digit_key_product: source and key_poly must be [{d}, R] and moduli [R], got "
                         f"{source.shape}, {key_poly.shape}, {moduli.shape}")
    for c in convs:
        if c.shape[-1] != x.shape[-1]:
            raise ValueError(f"digit_key_product: conv shape {c.shape} does not match x {x.shape}")
    if getattr(key, "dtype", None) != jnp.uint32 or key.ndim < 2 or key.shape[-1] != x.shape[-1]:
        raise ValueError(f"digit_key_product: key must be uint32[..., K, {x.shape[-1]}]")
    if sub is not None:
        sub = as_poly(sub, "digit_key_product")
        if sub.ndim < 3 or sub.shape[-3:] != (2, r, x.shape[-1]):
            raise ValueError(f"digit_key_product: sub must have shape [..., 2, {r}, {x.shape[-1]}], got {sub.shape}")
    # batch axes: the kernel serves an operand with a single batch entry to every entry
    operands = [("x", x.shape[:-2]), *((f"conv {i}", c.shape[:-2]) for i, c in enumerate(convs)),
                ("key", key.shape[:-2])] + ([("sub", sub.shape[:-3])] if sub is not None else [])
    try:
        lead = jnp.broadcast_shapes(*(b for _, b in operands))
    except ValueError:
        raise ValueError(f"digit_key_product: the batch axes {dict(operands)} do not broadcast") from None
    size = int(np.prod(lead))
    for what, b in operands:
        if int(np.prod(b)) not in (1, size):
            raise ValueError(f"digit_key_product: {what} has batch axes {b}; each operand "
                             f"needs all {lead} entries or a single one")
    out = jax.ShapeDtypeStruct(lead + (2, r, x.shape[-1]), jnp.uint32)
    attrs = dict(source=source.reshape(-1), key_poly=key_poly.reshape(-1), key_part=int(key_part),
                 moduli=moduli)
    if sub is None:
        if scale is not None or sub_ntt is not None:
            raise ValueError("digit_key_product: scale and sub_ntt are only used with sub")
        if intt is None:
            call = jax.ffi.ffi_call("jax_fhe_key_inner_product", out, vmap_method="expand_dims")
            return call(x, key, *convs, **attrs)
        ctx, rows = _transform_rows(intt, r, moduli, x.shape[-1], "intt")
        call = jax.ffi.ffi_call("jax_fhe_key_inner_product_intt", out, vmap_method="expand_dims")
        return call(x, key, rows_array(rows), ctx.moduli, ctx.ipsi, ctx.ipsi_shoup, ctx.n_inv,
                    ctx.n_inv_shoup, *convs, lazy=lazy_butterflies(ctx, rows), **attrs)
    if intt is not None:
        raise ValueError("digit_key_product: intt is not used with sub (ModDown's first and last steps)")
    scale = np.asarray(scale, dtype=np.int64)
    if scale.shape != (r,):
        raise ValueError(f"digit_key_product: scale must be [{r}], got {scale.shape}")
    if sub_ntt is None:
        call = jax.ffi.ffi_call("jax_fhe_key_inner_product_mod_down", out, vmap_method="expand_dims")
        return call(x, key, sub, *convs, scale=scale, **attrs)
    ctx, rows = _transform_rows(sub_ntt, r, moduli, x.shape[-1])
    # the NTT runs in place in the output, so sub needs every batch entry
    sub = jnp.broadcast_to(sub, out.shape)
    call = jax.ffi.ffi_call("jax_fhe_key_inner_product_mod_down_ntt", out, vmap_method="expand_dims")
    return call(x, key, sub, rows_array(rows), ctx.moduli, ctx.psi, ctx.psi_shoup, *convs,
                scale=scale, lazy=lazy_butterflies(ctx, rows), **attrs)
