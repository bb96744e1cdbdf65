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


@pytest.mark.parametrize("log_n, comps, batched_add", [(10, 2, True), (10, 3, False), (16, 2, True)])
def test_automorphism_add(log_n, comps, batched_add, device, put, rng):
    """sigma((x0 + add, x1, ...)) in one kernel equals the sum written first, then permuted: the
    add batched like x or one polynomial for every entry; jitted and under vmap."""
    n = 1 << log_n
    ps = rns.ntt_primes(30, 3, n)
    ctx = put(rns.make_context(ps, n))
    x = random_residues(rng, ps, n, batch=(2, comps))
    add = random_residues(rng, ps, n, batch=(2,) if batched_add else ())
    q = np.asarray(ps, np.uint64)[:, None]
    summed = x.copy()
    summed[:, 0] = ((x[:, 0].astype(np.uint64) + np.broadcast_to(add, (2,) + add.shape[-2:])) % q).astype(np.uint32)
    for g in (ops.galois_element(1, n), ops.galois_element(-7, n), ops.conjugation_element(n)):
        want = np.asarray(ops.automorphism_ntt(put(jnp.asarray(summed)), g))
        got = jax.jit(lambda a, b: ops.automorphism_ntt_add(a, b, g, ctx))(put(jnp.asarray(x)), put(jnp.asarray(add)))
        np.testing.assert_array_equal(np.asarray(got), want)
        in_axes = (0, 0 if batched_add else None)
        vm = jax.vmap(lambda a, b: ops.automorphism_ntt_add(a, b, g, ctx), in_axes=in_axes)(
            put(jnp.asarray(x)), put(jnp.asarray(add)))
        np.testing.assert_array_equal(np.asarray(vm), want)


def test_automorphism_add_bad_inputs():
    n = 1024
    ps = rns.ntt_primes(30, 2, n)
    ctx = rns.make_context(ps, n)
    x = jnp.zeros((3, 2, 2, n), jnp.uint32)
    with pytest.raises(ValueError, match="add must be"):
        ops.automorphism_ntt_add(x, jnp.zeros((2, 2, n), jnp.uint32), 3, ctx)   # batch 2 against 3
    with pytest.raises(ValueError, match="add must be"):
        ops.automorphism_ntt_add(x, jnp.zeros((3, 1, n), jnp.uint32), 3, ctx)   # limbs
    with pytest.raises(ValueError, match=r"\[\.\.\., C, L, N\]"):
        ops.automorphism_ntt_add(jnp.zeros((2, n), jnp.uint32), jnp.zeros((2, n), jnp.uint32), 3, ctx)
    with pytest.raises(ValueError, match="galois"):
        ops.automorphism_ntt_add(x, jnp.zeros((2, n), jnp.uint32), 4, ctx)
    with pytest.raises(ValueError, match="canonical|range|residue"):
        ops.automorphism_ntt_add(x, np.full((2, n), 0xFFFFFFFF, np.uint32), 3, ctx)  # a host add not reduced
