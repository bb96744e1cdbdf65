"""Encrypted predicates and aggregates on the bit-plane layout (:mod:`.layout`).

All functions are pure functions of CKKS ciphertexts (pytrees), the context and the evaluation
keys; they trace under ``jax.jit``/``jax.vmap``. Levels are those of ``ckks.mul`` (one per
ciphertext product); rotations are by the layout's static steps.

**Comparison** of a and b (bit planes a_k, b_k in blocks k = 0..B-1, B = 32): with the one
product p_k = a_k b_k per bit,

    E_k = 1 - a_k - b_k + 2 p_k     (a_k == b_k)          G_k = a_k - p_k     (a_k > b_k)

then log2 B combining steps over the blocks, "high half" first: with E', G' the planes rotated by
2^s R (block k + 2^s moved onto block k),

    G <- G' + E' G           E <- E' E

so that block 0 ends with G = [a > b] and E = [a == b] (other blocks hold partial results the
aggregates never read). Depth 1 + log2 B = 6 for B = 32 (E alone: the same; against a constant
the leaves are plaintext products, linear in a_k, also one level), 2 log2 B products and
2 log2 B rotations (E alone: log2 B + 1 and log2 B).

**Error.** Every value is 0 or 1 up to the CKKS error e; a product of two such values has error
<= |e1| + |e2| + e1 e2 + e_mult, so after d levels the mask error is about (2^d) e_fresh + the
rescale errors, far below 1/2 (measured: about 2^-20 on the toy sets, 2^-24 at n16-boot). The
aggregates sum at most ``rows`` masked bits, so their error is at most rows x max mask error: a
Sum or Count rounds to the exact integer while rows x error < 1/2.
"""
from __future__ import annotations

import numpy as np

from ... import ckks
from ...ckks import Ciphertext
from .layout import Layout, block_vector

__all__ = ["and_", "block_vector", "compare", "compare_const", "const_leaves", "constant_bits", "equal",
           "equal_const", "newton_inverse", "newton_iterations", "not_", "or_", "replicate", "rowsum",
           "sum_chunks"]


def _rot(ct, step, ctx, evk):
    return ckks.rotate(ct, step, ctx, evk)


def compare(a: Ciphertext, b: Ciphertext, layout: Layout, ctx, evk, *, need_equal: bool = False):
    """(G, E): block 0 holds [a > b] (and [a == b] when ``need_equal``; else E is None) per row."""
    p = ckks.mul(a, b, ctx, evk)
    e = ckks.add(ckks.sub(ckks.add(p, p, ctx), ckks.add(a, b, ctx), ctx), 1.0, ctx)
    g = ckks.sub(a, p, ctx)
    steps = layout.block_steps()
    for i, s in enumerate(steps):
        e_hi = _rot(e, s, ctx, evk)
        g = ckks.add(_rot(g, s, ctx, evk), ckks.mul(e_hi, g, ctx, evk), ctx)
        if need_equal or i < len(steps) - 1:
            e = ckks.mul(e_hi, e, ctx, evk)
    return g, (e if need_equal else None)


def equal(a: Ciphertext, b: Ciphertext, layout: Layout, ctx, evk) -> Ciphertext:
    """Block 0: [a == b] per row (depth 1 + log2 bits)."""
    p = ckks.mul(a, b, ctx, evk)
    e = ckks.add(ckks.sub(ckks.add(p, p, ctx), ckks.add(a, b, ctx), ctx), 1.0, ctx)
    for s in layout.block_steps():
        e = ckks.mul(_rot(e, s, ctx, evk), e, ctx, evk)
    return e


def const_leaves(a: Ciphertext, planes: dict, ctx):
    """Leaves (E_k, G_k) of a comparison of column ``a`` with a constant c, from plaintexts on
    blocks: ``sign`` = 2 c_k - 1 and ``low`` = 1 - c_k (multipliers at a's level, one level) and
    ``off`` = 1 - c_k (at the level below, the product's scale): E_k = (2 c_k - 1) a_k + 1 - c_k,
    G_k = (1 - c_k) a_k."""
    e = ckks.add(ckks.mul(a, planes["sign"], ctx), planes["off"], ctx)
    g = ckks.mul(a, planes["low"], ctx)
    return e, g


def constant_bits(c: int, layout: Layout) -> np.ndarray:
    """The bits of the constant c (float64[bits]), or a ValueError outside [0, 2^bits)."""
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not 0 <= int(c) < 2 ** layout.bits:
        raise ValueError(f"constant {c!r} is not an integer in [0, 2^{layout.bits})")
    return np.array([(int(c) >> k) & 1 for k in range(layout.bits)], dtype=np.float64)


def compare_const(a: Ciphertext, planes: dict, layout: Layout, ctx, evk, *, need_equal: bool = False):
    """(G, E) of a against a constant (``planes``: see :func:`const_leaves`): depth 1 + log2 bits."""
    e, g = const_leaves(a, planes, ctx)
    steps = layout.block_steps()
    for i, s in enumerate(steps):
        e_hi = _rot(e, s, ctx, evk)
        g = ckks.add(_rot(g, s, ctx, evk), ckks.mul(e_hi, g, ctx, evk), ctx)
        if need_equal or i < len(steps) - 1:
            e = ckks.mul(e_hi, e, ctx, evk)
    return g, (e if need_equal else None)


def equal_const(a: Ciphertext, planes: dict, layout: Layout, ctx, evk) -> Ciphertext:
    """Block 0: [a == c] per row (depth 1 + log2 bits)."""
    e = ckks.add(ckks.mul(a, planes["sign"], ctx), planes["off"], ctx)
    for s in layout.block_steps():
        e = ckks.mul(_rot(e, s, ctx, evk), e, ctx, evk)
    return e


def not_(m: Ciphertext, ctx) -> Ciphertext:
    """1 - m (no level)."""
    return ckks.sub(1.0, m, ctx)


def and_(m1: Ciphertext, m2: Ciphertext, ctx, evk) -> Ciphertext:
    """m1 m2 (one level)."""
    return ckks.mul(m1, m2, ctx, evk)


def or_(m1: Ciphertext, m2: Ciphertext, ctx, evk) -> Ciphertext:
    """m1 + m2 - m1 m2 (one level)."""
    return ckks.sub(ckks.add(m1, m2, ctx), ckks.mul(m1, m2, ctx, evk), ctx)


def replicate(m: Ciphertext, layout: Layout, ctx, evk) -> Ciphertext:
    """Copy block 0 into every block (other blocks must be 0): log2 bits rotations, no level."""
    for s in layout.block_steps()[::-1]:
        m = ckks.add(m, _rot(m, s, ctx, evk), ctx)
    return m


def rowsum(x: Ciphertext, layout: Layout, ctx, evk) -> Ciphertext:
    """Slot k R ends with the sum of block k's R slots: log2 R rotations, no level."""
    for s in layout.row_steps():
        x = ckks.add(x, _rot(x, s, ctx, evk), ctx)
    return x


def newton_inverse(x: Ciphertext, lo: float, hi: float, iterations: int, ctx, evk) -> Ciphertext:
    """1/x for x in [lo, hi] (0 < lo <= hi) without interaction: Newton's y <- y (2 - x y) on
    x / m, m = (lo + hi) / 2 (a change of the declared scale: exact, no level), from y0 = 1,
    so the relative error contracts as eps <- eps^2 from eps0 = (hi - lo) / (hi + lo); the
    result is declared divided by m again. One level brings x / m back to the default scale;
    the first step (y1 = 2 - x / m) is then free and each further one takes two levels: depth
    1 + 2 (iterations - 1)."""
    if not 0 < lo <= hi:
        raise ValueError(f"newton_inverse: need 0 < lo <= hi, got [{lo}, {hi}]")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"newton_inverse: iterations must be a positive int, got {iterations!r}")
    m = (lo + hi) / 2.0
    p = x.params
    xn = x.replace(scale=x.scale * m)           # the same ciphertext read as x / m, in [lo/m, hi/m]
    # back near the default scale (one rescale), so the products' scales do not compound m
    xn = ckks.level_down(xn, ctx, x.level - 1, scale=p.default_scale(x.level - 1))
    y = ckks.sub(2.0, xn, ctx)                  # y1 = y0 (2 - xn y0), y0 = 1
    for _ in range(iterations - 1):
        y = ckks.mul(y, ckks.sub(2.0, ckks.mul(xn, y, ctx, evk), ctx), ctx, evk)
    return y.replace(scale=y.scale * m)         # (1 / xn) / m = 1 / x


def newton_iterations(lo: float, hi: float, bits: float) -> int:
    """Iterations of :func:`newton_inverse` for a relative error below 2^-bits on [lo, hi]."""
    eps, n = (hi - lo) / (hi + lo), 1
    eps = eps * eps
    while eps > 2.0 ** -bits:
        eps, n = eps * eps, n + 1
    return n


def sum_chunks(ct: Ciphertext, ctx) -> Ciphertext:
    """Sum a batch of ciphertexts over the leading (chunk) axis: a tree of additions."""
    parts = [ct[i] for i in range(ct.data.shape[0])] if ct.data.ndim > 3 else [ct]
    while len(parts) > 1:
        nxt = [ckks.add(parts[i], parts[i + 1], ctx) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    return parts[0]

