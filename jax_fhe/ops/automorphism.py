"""Ring automorphisms X -> X^g (g odd, 0 < g < 2N) as XLA FFI primitives.

In the NTT domain the automorphism is a permutation of the bit-reversed evaluation slots; in
the coefficient domain it moves coefficient i to i*g mod 2N with a sign flip past N. CKKS
rotations by r slots use g = 5^r mod 2N, conjugation g = 2N - 1.
"""
from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ._checks import as_context, as_poly, check_canonical, limb_constants


def galois_element(step: int, n: int) -> int:
    """Galois element 5^step mod 2N of a slot rotation by ``step`` (negative: left/right inverse)."""
    two_n = 2 * int(n)
    return pow(5, int(step) % (int(n) // 2), two_n)


def conjugation_element(n: int) -> int:
    """Galois element 2N - 1 (complex conjugation of CKKS slots)."""
    return 2 * int(n) - 1


def _check_galois(galois: int, n: int) -> int:
    g = int(galois)
    if g <= 0 or g >= 2 * n or g % 2 == 0:
        raise ValueError(f"galois element {galois} must be odd and in (0, 2N = {2 * n})")
    return g


MAX_GALOIS = 16  # Galois elements per launch (kMaxAutomorphismGalois)


def automorphism_ntt(x, galois, *, add=None, ctx=None, rows: Sequence[int] | None = None) -> jax.Array:
    """X -> X^galois on NTT-domain data ``x``: uint32[..., L, N] (a slot permutation).

    add:    optional uint32[..., L, N], added to the first polynomial of ``x`` (then
            uint32[..., C, L, N], e.g. a key switch's (u0, u1)) before the permutation, in the
            same launch: sigma((x0 + add, x1, ...)) mod the primes of ``rows`` of the RNS context
            ``ctx`` (both required with ``add``). ``add`` has x's batch entries or a single one
            that serves them all.
    galois: with ``add`` also a sequence of G <= 16 elements: x is uint32[..., G, C, L, N] and
            entry g is permuted by galois[g] (add: uint32[..., L, N], shared by the G entries):
            the G hoisted rotations of one ciphertext in one launch."""
    x = as_poly(x, "automorphism_ntt")
    many = isinstance(galois, (list, tuple))
    if many:
        if add is None:
            raise ValueError("automorphism_ntt: several galois elements are taken with add only")
        if not 1 <= len(galois) <= MAX_GALOIS:
            raise ValueError(f"automorphism_ntt: 1 to {MAX_GALOIS} galois elements, got {len(galois)}")
        if x.ndim < 4 or x.shape[-4] != len(galois):
            raise ValueError(f"automorphism_ntt: with {len(galois)} galois elements x must be "
                             f"[..., {len(galois)}, C, L, N], got {tuple(x.shape)}")
        g = [_check_galois(e, x.shape[-1]) for e in galois]
    else:
        g = _check_galois(galois, x.shape[-1])
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    if add is None:
        if ctx is not None or rows is not None:
            raise ValueError("automorphism_ntt: ctx and rows are only used with add")
        return jax.ffi.ffi_call("jax_fhe_automorphism_ntt", out, vmap_method="expand_dims")(x, galois=g)
    if ctx is None:
        raise ValueError("automorphism_ntt: add needs the RNS context (ctx=) of its rows")
    ctx = as_context(ctx, "automorphism_ntt")
    host = add
    add = as_poly(add, "automorphism_ntt", x.shape[-1])
    if x.ndim < 3 or add.shape[-2] != x.shape[-2]:
        raise ValueError(f"automorphism_ntt: with add, x must be [..., C, L, N] and add [..., L, N]; got "
                         f"{tuple(x.shape)} and {tuple(add.shape)}")
    xb, ab = x.shape[:-4] if many else x.shape[:-3], add.shape[:-2]
    if int(np.prod(ab)) == 1:
        add = add.reshape(add.shape[-2:])
    elif ab != xb:  # the kernel takes x's batch entries or one
        try:
            lead = jnp.broadcast_shapes(xb, ab)
        except ValueError:
            raise ValueError(f"automorphism_ntt: add's batch axes {ab} do not broadcast with x's {xb}") from None
        x = jnp.broadcast_to(x, lead + x.shape[len(xb):])
        add = jnp.broadcast_to(add, lead + add.shape[-2:])
        out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    rows = ctx.rows_for(x.shape[-2], rows)
    check_canonical(host, ctx.primes_for(rows), "automorphism_ntt")
    moduli = limb_constants(ctx.moduli, ctx, rows)
    call = jax.ffi.ffi_call("jax_fhe_automorphism_ntt_add", out, vmap_method="expand_dims")
    return call(x, add, moduli, galois=np.asarray(g if many else [g], np.int64))


def automorphism_coeff(x, galois: int, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """X -> X^galois on coefficient-domain data ``x``: uint32[..., L, N]."""
    ctx = as_context(ctx, "automorphism_coeff")
    host = x
    x = as_poly(x, "automorphism_coeff", ctx.n)
    n = x.shape[-1]
    g = _check_galois(galois, n)
    rows = ctx.rows_for(x.shape[-2], rows)
    check_canonical(host, ctx.primes_for(rows), "automorphism_coeff")
    moduli = limb_constants(ctx.moduli, ctx, rows)
    call = jax.ffi.ffi_call("jax_fhe_automorphism_coeff",
                            jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="expand_dims")
    return call(x, moduli, galois=g, galois_inv=pow(g, -1, 2 * n))
