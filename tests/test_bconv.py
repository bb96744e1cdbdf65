"""Base conversion: bit-exact against the CRT definition, overflow-free and folding paths."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import ops, rns

import reference as ref
from conftest import random_residues

N = 1 << 16


def _bases(kind, lin, lout):
    if kind == "30bit":   # sum_j T q_j < 12 * 2^60 < 2^64: overflow-free
        src = rns.ntt_primes(30, lin, N)
        dst = rns.ntt_primes(30, lout, N, exclude=src)
    elif kind == "31bit":  # primes just below 2^31: 12 terms can reach ~1.5 * 2^64
        src = rns.ntt_primes(31, lin, N)
        dst = rns.ntt_primes(31, lout, N, exclude=src)
    elif kind == "small":  # 14- and 16-bit targets (one Montgomery step is not canonical there)
        src = rns.ntt_primes(31, lin, N)
        dst = (rns.ntt_primes(16, lout - 1, 1024) + rns.ntt_primes(14, 1, 1024))[:lout]
    else:  # mixed sizes, 31-bit sources into 25-bit targets
        src = rns.ntt_primes(31, lin, N)
        dst = rns.ntt_primes(25, lout, N)
    return src, dst


CASES = [("30bit", 12, 48), ("31bit", 12, 48), ("31bit", 4, 3), ("mixed", 7, 5),
         ("30bit", 1, 4), ("31bit", 24, 12), ("31bit", 64, 2), ("30bit", 3, 60),
         ("31bit", 16, 7), ("small", 12, 3)]


@pytest.mark.parametrize("kind, lin, lout", CASES)
def test_bconv_matches_crt_definition(kind, lin, lout, device, put, rng):
    src, dst = _bases(kind, lin, lout)
    table = rns.make_bconv_table(src, dst)
    n = 1024
    x = random_residues(rng, src, n, batch=(2,))
    y = np.asarray(ops.bconv(put(jnp.asarray(x)), put(table)))
    assert y.shape == (2, lout, n) and y.dtype == np.uint32
    cols = sorted({0, 1, 2, n - 1, *rng.integers(0, n, 40).tolist()})
    expect = ref.bconv([x[1, j, cols].tolist() for j in range(lin)], src, dst)
    np.testing.assert_array_equal(y[1][:, cols], np.array(expect, dtype=np.uint32))


def test_overflow_condition_is_decided_per_table():
    src30, dst30 = _bases("30bit", 12, 48)
    assert rns.make_bconv_table(src30, dst30).overflow_free
    src31, dst31 = _bases("31bit", 12, 48)
    t31 = rns.make_bconv_table(src31, dst31)
    q_hat = [math.prod(src31) // q for q in src31]
    worst = max(sum((h % p) * q for h, q in zip(q_hat, src31)) for p in dst31)
    assert worst >= 2**64 and not t31.overflow_free and 1 <= t31.fold_every < 12
    assert "reduce every" in repr(t31)


def test_bconv_is_crt_plus_small_multiple(device, put, rng):
    """out = (x + u Q) mod p with 0 <= u < Lin, x the CRT value of the input."""
    src, dst = _bases("31bit", 6, 3)
    table = put(rns.make_bconv_table(src, dst))
    x = random_residues(rng, src, 1024)
    y = np.asarray(ops.bconv(put(jnp.asarray(x)), table))
    big_q = math.prod(src)
    for c in range(0, 1024, 97):
        v = ref.crt(x[:, c].tolist(), src)
        us = {u for u in range(len(src)) if all((v + u * big_q) % p == int(y[i, c]) for i, p in enumerate(dst))}
        assert us, c


def test_full_n_edge_values(device, put):
    src, dst = _bases("31bit", 12, 4)
    table = put(rns.make_bconv_table(src, dst))
    x = np.broadcast_to(np.array(src, dtype=np.uint64)[:, None] - 1, (12, N)).astype(np.uint32)
    y = np.asarray(ops.bconv(put(jnp.asarray(x)), table))
    expect = ref.bconv([[q - 1] for q in src], src, dst)
    np.testing.assert_array_equal(y, np.broadcast_to(np.array(expect, np.uint32), y.shape))


def test_jit_vmap(device, put, rng):
    src, dst = _bases("30bit", 12, 20)
    table = put(rns.make_bconv_table(src, dst))
    x = put(jnp.asarray(random_residues(rng, src, 2048, batch=(3, 2))))
    eager = np.asarray(ops.bconv(x, table))
    np.testing.assert_array_equal(np.asarray(jax.jit(ops.bconv)(x, table)), eager)
    vm = jax.vmap(lambda v: ops.bconv(v, table), in_axes=1, out_axes=1)(x)
    np.testing.assert_array_equal(np.asarray(vm), eager)
    loop = np.stack([np.asarray(ops.bconv(x[i], table)) for i in range(3)])
    np.testing.assert_array_equal(loop, eager)


def test_bad_inputs():
    src, dst = _bases("30bit", 3, 2)
    table = rns.make_bconv_table(src, dst)
    with pytest.raises(ValueError, match="converts from 3"):
        ops.bconv(jnp.zeros((4, 1024), jnp.uint32), table)
    with pytest.raises(TypeError, match="uint32"):
        ops.bconv(jnp.zeros((3, 1024), jnp.int32), table)
    with pytest.raises(TypeError, match="BConvTable"):
        ops.bconv(jnp.zeros((3, 1024), jnp.uint32), object())
    with pytest.raises(ValueError, match="distinct"):
        rns.make_bconv_table([src[0], src[0]], dst)
    with pytest.raises(ValueError, match="not a prime"):
        rns.make_bconv_table([src[0], 2**31 + 1], dst)
    with pytest.raises(ValueError, match="at most 64"):
        rns.make_bconv_table(rns.ntt_primes(30, 65, 1024), dst)
