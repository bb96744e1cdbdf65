"""Ring automorphisms X -> X^g (g odd, 0 < g < 2N) as XLA FFI primitives.

In the NTT domain the automorphism is a permutation of the bit-reversed evaluation slots; in
the coefficient domain it moves coefficient i to i*g mod 2N with a sign flip past N. CKKS
rotations by r slots use g = 5^r mod 2N, conjugation g = 2N - 1.
"""
from __future__ import annotations

from collections.abc import Sequence

import jax

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


def automorphism_ntt(x, galois: int) -> jax.Array:
    """X -> X^galois on NTT-domain data ``x``: uint32[..., L, N] (a slot permutation)."""
    x = as_poly(x, "automorphism_ntt")
    g = _check_galois(galois, x.shape[-1])
    call = jax.ffi.ffi_call("jax_fhe_automorphism_ntt", jax.ShapeDtypeStruct(x.shape, x.dtype),
                            vmap_method="expand_dims")
    return call(x, galois=g)


def automorphism_ntt_add(x, add, galois: int, ctx, rows: Sequence[int] | None = None) -> jax.Array:
    """sigma((x0 + add, x1, ...)) on NTT-domain data: x uint32[..., C, L, N] (C >= 1
    polynomials per entry, e.g. a key switch's (u0, u1)), add uint32[..., L, N] with x's batch
    axes or none (one polynomial added to every entry's component 0), rows ``rows`` of ``ctx``.
    Equal to automorphism_ntt of x with add_mod(x0, add) in component 0, in one kernel that
    never writes the sum (a rotation's c0 + u0). Under ``jax.vmap``, batch ``x`` wherever
    ``add`` is batched, and an ``add`` with batch axes together with ``x`` (other mixes raise
    in the kernel's shape check)."""
    ctx = as_context(ctx, "automorphism_ntt_add")
    host, host_add = x, add
    x = as_poly(x, "automorphism_ntt_add", ctx.n)
    add = as_poly(add, "automorphism_ntt_add", ctx.n)
    if x.ndim < 3:
        raise ValueError(f"automorphism_ntt_add: x must be [..., C, L, N], got shape {x.shape}")
    g = _check_galois(galois, x.shape[-1])
    rows = ctx.rows_for(x.shape[-2], rows)
    check_canonical(host, ctx.primes_for(rows), "automorphism_ntt_add")
    check_canonical(host_add, ctx.primes_for(rows), "automorphism_ntt_add")
    if add.shape[-2:] != x.shape[-2:] or add.shape[:-2] not in ((), x.shape[:-3]):
        raise ValueError(f"automorphism_ntt_add: add must be [L, N] or x's batch axes + [L, N] = "
                         f"{x.shape[:-3] + x.shape[-2:]}, got {add.shape}")
    moduli = limb_constants(ctx.moduli, ctx, rows)
    call = jax.ffi.ffi_call("jax_fhe_automorphism_ntt_add", jax.ShapeDtypeStruct(x.shape, x.dtype),
                            vmap_method="expand_dims")
    return call(x, add, moduli, galois=g)


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
