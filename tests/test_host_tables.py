"""rns.HostTable and tables_field: the contexts' small tables as jit constants (not argument
leaves). Content equality and hashing, immutability, pickling, jit cache sharing and retracing,
and a KLSS context (whose tables hold array leaves) keeping its structure under tree maps."""
import copy
import dataclasses
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import ckks
from jax_fhe.rns import HostRandom, HostTable, host_u32
from jax_fhe.rns.pytree import host_table


def test_content_equality_and_hash():
    a, b = host_u32([1, 2, 3]), host_u32(np.array([1, 2, 3], np.uint64))
    assert a is not b and a == b and hash(a) == hash(b)
    assert a != host_u32([1, 2, 4]) and not (a == host_u32([1, 2, 4]))
    assert host_u32(5) != host_u32([5])                     # shapes differ: 0-d vs (1,)
    assert host_u32([[1, 2]]) != host_u32([1, 2])
    assert (a == None) is False  # noqa: E711 (a static field left empty elsewhere)
    np.testing.assert_array_equal(a == np.array([1, 0, 3], np.uint32), [True, False, True])
    got = jax.jit(lambda x: a != x)(jnp.array([1, 3, 3], jnp.uint32))   # a jax operand: element-wise
    np.testing.assert_array_equal(np.asarray(got), [False, True, False])


def test_read_only_pickle_copy():
    a = host_u32([7, 8])
    with pytest.raises(ValueError):
        a.flags.writeable = True
    with pytest.raises(ValueError):
        a[0] = 1
    assert copy.deepcopy(a) is a and copy.copy(a) is a
    big = host_table(np.array([2**40], np.int64))
    back = pickle.loads(pickle.dumps(big))
    assert isinstance(back, HostTable) and back.dtype == np.int64 and back == big
    assert not back.flags.writeable


def test_contexts_hold_few_leaves_and_share_compilations():
    """The toy context's only leaves are the ring's twiddle tables and the imaginary unit; a
    second context of the same parameters reuses the first's compilation; a context whose tables
    differ compiles anew."""
    p = ckks.toy_n12()
    c1, c2 = ckks.make_context(p), ckks.make_context(p)
    assert len(jax.tree_util.tree_leaves(c1)) == 10
    traces = []

    def f(x, ctx):
        traces.append(1)
        return x + jnp.asarray(ctx.keyswitch[p.max_level].p_inv)[0]
    g = jax.jit(f)
    x = jnp.zeros(3, jnp.uint32)
    g(x, c1)
    g(x, c2)
    assert len(traces) == 1
    top = c1.keyswitch[p.max_level]
    changed = dataclasses.replace(top, p_inv=host_u32(np.asarray(top.p_inv) ^ 1))
    ks = tuple(changed if lvl == p.max_level else t for lvl, t in enumerate(c1.keyswitch))
    c3 = dataclasses.replace(c1, keyswitch=ks)
    out = g(x, c3)
    assert len(traces) == 2 and int(out[0]) == int(np.asarray(top.p_inv)[0] ^ 1)


def test_klss_context_structure_survives_tree_maps():
    """KLSS tables hold array leaves (a ring's twiddles): they stay leaves, and a tree mapped from
    the context (vmap's in_axes) has the context's structure."""
    ctx = ckks.make_context(ckks.toy_n12_klss())
    assert len(jax.tree_util.tree_leaves(ctx)) > 10
    axes = jax.tree.map(lambda _: None, ctx)
    keys = ckks.keygen(ctx, HostRandom.insecure_deterministic(0))
    z = np.random.default_rng(0).uniform(-1, 1, (2, 8))
    cts = ckks.encrypt(ckks.encode(z, ctx), ctx, keys.public, HostRandom.insecure_deterministic(1))
    f = jax.vmap(lambda c, cx: ckks.mul(c, c, cx, keys.evaluation), in_axes=(0, axes))
    out = f(cts, ctx)
    got = ckks.decode(ckks.decrypt(out, ctx, keys.secret), ctx)
    assert np.abs(got[:, :8] - z ** 2).max() < 2.0 ** -15
