"""Automorphisms X -> X^g: coefficient domain against the definition, NTT domain against the
coefficient domain through the NTT."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import ops, rns

import reference as ref
from conftest import random_residues


def _galois_set(n):
    return [ops.galois_element(1, n), ops.galois_element(-1, n), ops.galois_element(37, n),
            ops.conjugation_element(n), 3, 2 * n - 3, 1]


@pytest.mark.parametrize("log_n", [10, 13, 16])
def test_coeff_automorphism_matches_definition(log_n, device, put, rng):
    n = 1 << log_n
    ps = rns.ntt_primes(31, 2, n)
    ctx = put(rns.make_context(ps, n))
    x = random_residues(rng, ps, n)
    for g in _galois_set(n)[:4] if log_n == 16 else _galois_set(n):
        y = np.asarray(ops.automorphism_coeff(put(jnp.asarray(x)), g, ctx))
        for t, q in enumerate(ps):
            assert y[t].tolist() == ref.automorphism_coeff(x[t].tolist(), g, q), (g, t)


@pytest.mark.parametrize("log_n", range(10, 17))
def test_ntt_automorphism_commutes_with_ntt(log_n, device, put, rng):
    n = 1 << log_n
    ps = rns.ntt_primes(30, 2, n)
    ctx = put(rns.make_context(ps, n))
    x = put(jnp.asarray(random_residues(rng, ps, n, batch=(2,))))
    for g in _galois_set(n):
        lhs = ops.automorphism_ntt(ops.ntt(x, ctx), g)
        rhs = ops.ntt(ops.automorphism_coeff(x, g, ctx), ctx)
        np.testing.assert_array_equal(np.asarray(lhs), np.asarray(rhs))


def test_composition_and_identity(device, put, rng):
    n = 4096
    ps = rns.ntt_primes(30, 1, n)
    x = put(jnp.asarray(random_residues(rng, ps, n)))
    g, h = ops.galois_element(3, n), ops.galois_element(11, n)
    both = ops.automorphism_ntt(ops.automorphism_ntt(x, g), h)
    np.testing.assert_array_equal(np.asarray(both), np.asarray(ops.automorphism_ntt(x, g * h % (2 * n))))
    np.testing.assert_array_equal(np.asarray(ops.automorphism_ntt(x, 1)), np.asarray(x))
    assert ops.galois_element(n // 2, n) == 1  # rotating by all n/2 slots is the identity


def test_jit_vmap(device, put, rng):
    n = 2048
    ps = rns.ntt_primes(30, 2, n)
    ctx = put(rns.make_context(ps, n))
    x = put(jnp.asarray(random_residues(rng, ps, n, batch=(3,))))
    g = ops.galois_element(5, n)
    eager = np.asarray(ops.automorphism_coeff(x, g, ctx))
    f = jax.jit(lambda v: ops.automorphism_coeff(v, g, ctx))
    np.testing.assert_array_equal(np.asarray(f(x)), eager)
    vm = jax.vmap(lambda v: ops.automorphism_ntt(v, g))(x)
    np.testing.assert_array_equal(np.asarray(vm), np.stack([np.asarray(ops.automorphism_ntt(x[i], g)) for i in range(3)]))


def test_bad_galois_elements():
    n = 1024
    ctx = rns.make_context(rns.ntt_primes(30, 1, n), n)
    x = jnp.zeros((1, n), jnp.uint32)
    for g in (0, 2, 2 * n, 2 * n + 1, -3):
        with pytest.raises(ValueError, match="galois"):
            ops.automorphism_ntt(x, g)
        with pytest.raises(ValueError, match="galois"):
            ops.automorphism_coeff(x, g, ctx)


@pytest.mark.parametrize("add_batched", [False, True])
def test_ntt_automorphism_adding_to_the_first_polynomial(add_batched, device, put, rng):
    """automorphism_ntt(x, g, add=a): sigma((x0 + a, x1)) in one launch, against the Python-integer
    definition through the inverse NTT (a: one entry for every batch entry, or one per entry);
    edge residues q - 1 on both sides wrap."""
    n = 1024
    ps = rns.ntt_primes(30, 3, n)
    ctx = put(rns.make_context(ps, n))
    x = random_residues(rng, ps, n, batch=(2, 2))            # [B=2, C=2, L=3, N]
    a = random_residues(rng, ps, n, batch=(2,) if add_batched else ())
    x[..., :5] = np.array(ps, np.uint32)[:, None] - 1
    a[..., :5] = np.array(ps, np.uint32)[:, None] - 1
    xn, an = ops.ntt(put(jnp.asarray(x)), ctx), ops.ntt(put(jnp.asarray(a)), ctx)
    for g in (ops.galois_element(3, n), ops.conjugation_element(n)):
        got = np.asarray(ops.intt(ops.automorphism_ntt(xn, g, add=an, ctx=ctx), ctx))
        for b in range(2):
            ab = a[b] if add_batched else a
            for c in range(2):
                for t, q in enumerate(ps):
                    v = [(int(u) + (int(w) if c == 0 else 0)) % q for u, w in zip(x[b, c, t], ab[t])]
                    assert got[b, c, t].tolist() == ref.automorphism_coeff(v, g, q), (g, b, c, t)
        # jit and vmap (over the batch; a shared add stays unbatched) give the same bits
        f = jax.jit(jax.vmap(lambda v, w: ops.automorphism_ntt(v, g, add=w, ctx=ctx),
                             in_axes=(0, 0 if add_batched else None)))
        np.testing.assert_array_equal(np.asarray(ops.intt(f(xn, an), ctx)), got)


def test_ntt_automorphism_add_bad_inputs():
    n = 1024
    ps = rns.ntt_primes(30, 2, n)
    ctx = rns.make_context(ps, n)
    x = jnp.zeros((2, 2, n), jnp.uint32)
    with pytest.raises(ValueError, match="needs the RNS context"):
        ops.automorphism_ntt(x, 3, add=x[0])
    with pytest.raises(ValueError, match="only used with add"):
        ops.automorphism_ntt(x, 3, ctx=ctx)
    with pytest.raises(ValueError, match=r"x must be \[..., C, L, N\]"):
        ops.automorphism_ntt(x, 3, add=jnp.zeros((3, n), jnp.uint32), ctx=ctx)
    with pytest.raises(ValueError, match="do not broadcast"):
        ops.automorphism_ntt(jnp.zeros((2, 2, 2, n), jnp.uint32), 3, add=jnp.zeros((3, 2, n), jnp.uint32), ctx=ctx)
    with pytest.raises(ValueError, match="non-canonical|canonical|>= its"):
        ops.automorphism_ntt(x, 3, add=np.full((2, n), 2**31, np.uint32), ctx=ctx)


def test_ntt_automorphism_several_galois_elements(device, put, rng):
    """galois = [g_0, ..., g_(G-1)] with add: x [B, G, C, L, N], entry g permuted by g_g after adding
    the shared add to its first polynomial, one launch; bit for bit the single-element calls
    (themselves checked against the definition above); G = 16 is the most, 17 is refused."""
    n = 1024
    ps = rns.ntt_primes(30, 2, n)
    ctx = put(rns.make_context(ps, n))
    gs = [ops.galois_element(s, n) for s in (1, 2, 5, 7, 100)] + [ops.conjugation_element(n)]
    x = put(jnp.asarray(random_residues(rng, ps, n, batch=(2, len(gs), 2))))
    a = put(jnp.asarray(random_residues(rng, ps, n, batch=(2,))))
    got = np.asarray(ops.automorphism_ntt(x, gs, add=a, ctx=ctx))
    for j, g in enumerate(gs):
        np.testing.assert_array_equal(got[:, j], np.asarray(ops.automorphism_ntt(x[:, j], g, add=a, ctx=ctx)))
    f = jax.jit(jax.vmap(lambda v, w: ops.automorphism_ntt(v, gs, add=w, ctx=ctx)))
    np.testing.assert_array_equal(np.asarray(f(x, a)), got)
    with pytest.raises(ValueError, match="1 to 16 galois"):
        ops.automorphism_ntt(jnp.zeros((17, 2, 2, n), jnp.uint32), [3] * 17, add=a[0], ctx=ctx)
    with pytest.raises(ValueError, match="with add only"):
        ops.automorphism_ntt(x, gs)
    with pytest.raises(ValueError, match="must be"):
        ops.automorphism_ntt(x[:, :2], gs, add=a, ctx=ctx)
