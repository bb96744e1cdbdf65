"""The lattice layer's hybrid key switching, stage by stage, against exact integer arithmetic."""
import math

import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import ops, rlwe, rns
from jax_fhe.rns import HostRandom

N = 1 << 10


@pytest.fixture(scope="module")
def basis():
    qs = rns.ntt_primes(30, 5, N)
    ps = rns.ntt_primes(31, 2, N)
    return qs + ps, (0, 1, 2, 3, 4), (5, 6)


def _centered(x, m):
    x %= m
    return x - m if x >= m // 2 else x


def test_exact_conv_is_the_centered_crt(basis, device, put, rng):
    primes, qrows, prows = basis
    ring = put(rns.make_context(primes, N))
    conv = put(rns.make_exact_conv(primes, prows, qrows))
    src = [primes[r] for r in prows]
    big = math.prod(src)
    v = [int(rng.integers(-(big // 2), big // 2)) for _ in range(N)]
    v[:4] = [0, 1, -1, -(big // 2)]  # edges (the last one is exactly -Q/2)
    x = np.array([[c % q for c in v] for q in src], dtype=np.uint32)
    out = np.asarray(ops.exact_conv(put(jnp.asarray(x)), conv))
    for i, r in enumerate(qrows):
        q = primes[r]
        want = [c % q for c in v]
        got = out[i].tolist()
        # exact except where the float32 fraction sum sits within ~2^-20 of 1/2 (then off by Q)
        bad = [k for k in range(N) if got[k] != want[k]]
        assert all((got[k] - want[k] + big) % q == 0 or (got[k] - want[k] - big) % q == 0 for k in bad)
        assert len(bad) <= 1


def test_mod_up_and_mod_down(basis, device, put, rng):
    primes, qrows, prows = basis
    ring = put(rns.make_context(primes, N))
    tables = put(rlwe.make_hybrid_tables(primes, qrows, prows, alpha=2))
    assert [d for d, _ in tables.digits] == [0, 1, 2]
    qs = [primes[r] for r in qrows]
    x = np.stack([rng.integers(0, q, N) for q in qs]).astype(np.uint32)
    x_ntt = ops.ntt(put(jnp.asarray(x)), ring, qrows)
    ext = np.asarray(ops.intt(rlwe.mod_up(x_ntt, ring, tables), ring, tables.ext_rows))
    assert ext.shape == (3, 7, N)
    for i, (_, drows) in enumerate(tables.digits):
        qd = math.prod(primes[r] for r in drows)
        for k in range(0, N, 97):
            xd = _centered(sum(int(x[qrows.index(r), k]) * (qd // primes[r]) * pow(qd // primes[r], -1, primes[r])
                               for r in drows), qd)
            # digit d is the centered integer [x]_{Q_d}, on every row of the extended basis
            for j, r in enumerate(tables.ext_rows):
                assert int(ext[i, j, k]) == xd % primes[r]
    # mod_down(P * y) == y exactly (y given on q rows; P y is 0 on the special rows)
    big_p = math.prod(primes[r] for r in prows)
    py = np.concatenate([(x.astype(np.uint64) * np.array([[big_p % q] for q in qs], dtype=np.uint64)
                          % np.array([[q] for q in qs], dtype=np.uint64)).astype(np.uint32),
                         np.zeros((2, N), dtype=np.uint32)])
    py_ntt = ops.ntt(put(jnp.asarray(py)), ring, tables.ext_rows)
    np.testing.assert_array_equal(np.asarray(rlwe.mod_down(py_ntt, ring, tables)), np.asarray(x_ntt))


def test_key_switch_error_is_small(basis, device, put):
    primes, qrows, prows = basis
    ring = put(rns.make_context(primes, N))
    tables = put(rlwe.make_hybrid_tables(primes, qrows, prows, alpha=2))
    r = HostRandom.insecure_deterministic(5)
    s_to = put(ops.ntt(jnp.asarray(rns.to_residues(r.ternary((N,)), primes)), ring))
    s_from = put(ops.ntt(jnp.asarray(rns.to_residues(r.ternary((N,)), primes)), ring))
    key = put(rlwe.gen_switching_key(ring, s_from, s_to, num_q=5, alpha=2, sigma=3.2, rng=r))
    assert key.data.shape == (3, 2, 7, N)
    x = put(jnp.asarray(r.uniform_mod([primes[i] for i in qrows], N)))
    c = rlwe.key_switch(x, key, ring, tables)
    mm = lambda a, b: ops.mul_mod(a, b, ring, qrows)  # noqa: E731
    err = ops.intt(ops.sub_mod(ops.add_mod(c[0], mm(c[1], s_to[:5]), ring, qrows), mm(x, s_from[:5]),
                               ring, qrows), ring, qrows)
    err = np.asarray(err).astype(np.int64)
    cen = [np.where(err[i] > primes[i] // 2, err[i] - primes[i], err[i]) for i in range(5)]
    for i in range(1, 5):
        np.testing.assert_array_equal(cen[i], cen[0])  # one small integer polynomial on every row
    # ModDown rounding u0 + u1 s with |u| <= 1/2 and ternary s; measured max |e| = 33 at N = 2^10
    assert np.abs(cen[0]).max() < 100


def test_hybrid_bad_inputs(basis):
    primes, qrows, prows = basis
    ring = rns.make_context(primes, N)
    tables = rlwe.make_hybrid_tables(primes, qrows, prows, alpha=2)
    with pytest.raises(ValueError, match=r"expected \[\.\.\., 5, N\]"):
        rlwe.mod_up(jnp.zeros((4, N), jnp.uint32), ring, tables)
    with pytest.raises(TypeError, match="KeySwitchKey"):
        rlwe.key_inner_product(jnp.zeros((3, 7, N), jnp.uint32), object(), ring, tables)
    with pytest.raises(ValueError, match="overlap"):
        rlwe.make_hybrid_tables(primes, qrows, (4, 5), alpha=2)


@pytest.mark.parametrize("qrows, stacked", [((0, 1, 2, 3, 4), True), ((0, 1, 3, 4), True), ((4, 0, 2), True),
                                            ((0, 1, 2, 3), True), ((0, 2, 1, 3), False)])
def test_key_switch_equals_the_three_stages(basis, qrows, stacked):
    """key_switch never assembles the extended digits, but must equal the staged path (each
    digit converted alone) bit for bit, also on bases with gaps or out of order and under vmap.
    Digits whose rows lie next to each other in the basis take the stacked ModUp (one BConv and
    one NTT launch for every digit), of equal sizes ((0, 1, 2, 3): two digits of two rows) or
    not ((0, 1, 2, 3, 4): 2, 2 and 1 rows, padded); (0, 2, 1, 3) splits digit 0, so its digits
    convert one by one."""
    import jax
    primes, _, prows = basis
    ring = rns.make_context(primes, N)
    tables = rlwe.make_hybrid_tables(primes, qrows, prows, alpha=2)
    assert (tables.mod_up_stacked is not None) == stacked
    assert len(rlwe.mod_up_convs(jnp.zeros((len(qrows), N), jnp.uint32), ring, tables)) == (
        1 if tables.mod_up_stacked is not None else len(tables.digits))
    r = HostRandom.insecure_deterministic(6)
    s = ops.ntt(jnp.asarray(rns.to_residues(r.ternary((2, N)), primes)), ring)
    key = rlwe.gen_switching_key(ring, s[0], s[1], num_q=5, alpha=2, sigma=3.2, rng=r)
    x = jnp.asarray(np.moveaxis(r.uniform_mod([primes[i] for i in qrows], (3, N)), 0, 1))
    staged_key = lambda v, k: rlwe.mod_down(rlwe.key_inner_product(rlwe.mod_up(v, ring, tables), k, ring,  # noqa: E731
                                                                   tables), ring, tables)
    staged = lambda v: staged_key(v, key)  # noqa: E731
    want = np.asarray(jax.vmap(staged)(x))
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(rlwe.key_switch, in_axes=(0, None, None, None)))(
        x, key, ring, tables)), want)
    np.testing.assert_array_equal(np.asarray(rlwe.key_switch(x[1], key, ring, tables)), want[1])
    # vmap over keys: every entry switches under its own key
    key2 = rlwe.gen_switching_key(ring, s[1], s[0], num_q=5, alpha=2, sigma=3.2, rng=r)
    keys = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), key, key2)
    by_key = jax.vmap(rlwe.key_switch, in_axes=(None, 0, None, None))(x[0], keys, ring, tables)
    np.testing.assert_array_equal(np.asarray(by_key[0]), want[0])
    np.testing.assert_array_equal(np.asarray(by_key[1]), np.asarray(staged_key(x[0], key2)))


def test_key_switch_with_more_digits_than_one_launch():
    """Ten one-row digits (the key-product kernel takes eight per launch): the launches are summed
    and ModDown's epilogue runs after them; the bits equal the three stages'."""
    qs = rns.ntt_primes(30, 10, N)
    primes = qs + rns.ntt_primes(31, 1, N)
    ring = rns.make_context(primes, N)
    r = HostRandom.insecure_deterministic(7)
    s = ops.ntt(jnp.asarray(rns.to_residues(r.ternary((2, N)), primes)), ring)
    key = rlwe.gen_switching_key(ring, s[0], s[1], num_q=10, alpha=1, sigma=3.2, rng=r)
    for qrows in [tuple(range(10)), (0, 2, 3, 4, 5, 6, 7, 8, 9)]:
        tables = rlwe.make_hybrid_tables(primes, qrows, (10,), alpha=1)
        x = jnp.asarray(r.uniform_mod([primes[i] for i in qrows], N))
        ext = rlwe.key_inner_product(rlwe.mod_up(x, ring, tables), key, ring, tables)
        convs = rlwe.mod_up_convs(x, ring, tables)
        np.testing.assert_array_equal(np.asarray(rlwe.key_product_extended(x, convs, key, ring, tables)),
                                      np.asarray(ext))
        np.testing.assert_array_equal(np.asarray(rlwe.key_switch(x, key, ring, tables)),
                                      np.asarray(rlwe.mod_down(ext, ring, tables)))


def _divided(res, mods, big_pd):
    """Exact round(z / (P D)) for the residues ``res`` of z modulo ``mods`` (centered CRT)."""
    big = math.prod(mods)
    z = _centered(sum(int(r) * (big // m) * pow(big // m, -1, m) for r, m in zip(res, mods)), big)
    return (z - _centered(z, big_pd)) // big_pd


@pytest.mark.parametrize("with_add", [False, True])
def test_divide_is_the_rounded_quotient(basis, device, put, with_add):
    """ModDown merged with a rescale: key_switch_divide(x) = round((key product + P add) / (P D))
    and mod_down_divide(y) = round(y / (P D)) over the kept rows, against exact integers (D =
    rows 1 and 3 of the basis 0..4, P = rows 5, 6), batched, jitted."""
    import jax
    primes, qrows, prows = basis
    drop = (1, 3)
    keep = (0, 2, 4)
    ring = put(rns.make_context(primes, N))
    tables = put(rlwe.make_hybrid_tables(primes, qrows, prows, alpha=2))
    assert rlwe.keyswitch.can_divide(tables, drop)
    r = HostRandom.insecure_deterministic(11)
    s = ops.ntt(jnp.asarray(rns.to_residues(r.ternary((2, N)), primes)), ring)
    key = put(rlwe.gen_switching_key(ring, s[0], s[1], num_q=5, alpha=2, sigma=3.2, rng=r))
    x = put(jnp.asarray(np.moveaxis(r.uniform_mod([primes[i] for i in qrows], (2, N)), 0, 1)))  # [2, 5, N]
    add = (put(jnp.asarray(np.moveaxis(r.uniform_mod([primes[i] for i in qrows], (2, 2, N)), 0, 2)))
           if with_add else None)                                                               # [2, 2, 5, N]
    y = rlwe.key_inner_product(rlwe.mod_up(x, ring, tables), key, ring, tables)                  # [2, 2, 7, N]
    got = jax.jit(rlwe.keyswitch.key_switch_divide, static_argnums=4)(x, key, ring, tables, drop, add)
    assert got.shape == (2, 2, 3, N)
    got = np.asarray(ops.intt(got, ring, keep))
    y_c = np.asarray(ops.intt(y, ring, tables.ext_rows))
    a_c = np.asarray(ops.intt(add, ring, qrows)) if with_add else np.zeros((2, 2, 5, N), np.uint32)
    big_p = math.prod(primes[i] for i in prows)
    mods = [primes[i] for i in tables.ext_rows]
    pd = big_p * primes[1] * primes[3]
    bad = 0
    for b in range(2):
        for c in range(2):
            for k in range(0, N, 7):
                res = [(int(y_c[b, c, j, k]) + (big_p * int(a_c[b, c, j, k]) if j < 5 else 0)) % m
                       for j, m in enumerate(mods)]
                want = _divided(res, mods, pd)
                row = [int(got[b, c, j, k]) for j in range(3)]
                if row != [want % primes[i] for i in keep]:
                    # the fixed-point quotient may slip by one near a half: off by exactly 1
                    assert any(row == [(want + e) % primes[i] for i in keep] for e in (-1, 1)), (b, c, k)
                    bad += 1
    assert bad <= 2
    if not with_add:  # the unfused division of extended data: the same bits
        np.testing.assert_array_equal(np.asarray(ops.intt(rlwe.keyswitch.mod_down_divide(y, ring, tables, drop),
                                                          ring, keep)), got)


def test_divide_refused(basis):
    primes, qrows, prows = basis
    ring = rns.make_context(primes, N)
    tables = rlwe.make_hybrid_tables(primes, qrows, prows, alpha=2)
    assert not rlwe.keyswitch.can_divide(tables, (5,))      # a special row
    assert not rlwe.keyswitch.can_divide(tables, ())
    assert not rlwe.keyswitch.can_divide(tables, (1, 1))    # a row twice
    assert not rlwe.keyswitch.can_divide(tables, qrows)     # nothing kept
    bgv = rlwe.make_hybrid_tables(primes, qrows, prows, alpha=2, plain_modulus=65537)
    assert not rlwe.keyswitch.can_divide(bgv, (4,))          # ModDown keeps the phase mod t
    with pytest.raises(ValueError, match="cannot merge ModDown"):
        rlwe.keyswitch.mod_down_divide(jnp.zeros((7, N), jnp.uint32), ring, bgv, (4,))
    with pytest.raises(ValueError, match=r"expected \[\.\.\., 7, N\]"):
        rlwe.keyswitch.mod_down_divide(jnp.zeros((5, N), jnp.uint32), ring, tables, (4,))
    r = HostRandom.insecure_deterministic(12)
    s = ops.ntt(jnp.asarray(rns.to_residues(r.ternary((2, N)), primes)), ring)
    key = rlwe.gen_switching_key(ring, s[0], s[1], num_q=5, alpha=2, sigma=3.2, rng=r)
    with pytest.raises(ValueError, match="add has shape"):
        rlwe.keyswitch.key_switch_divide(jnp.zeros((5, N), jnp.uint32), key, ring, tables, (4,),
                                         add=jnp.zeros((5, N), jnp.uint32))


@pytest.mark.parametrize("with_add", [False, True])
def test_divide_fused_equals_the_stages(device, put, with_add):
    """At N = 2^16 one ciphertext takes the GPU's fused key products (the inverse NTT of the
    rows D + P, gathered from the middle and the end of the extended basis, in the product's
    epilogue): key_switch_divide equals mod_down_divide of the staged key product plus P add,
    bit for bit."""
    n = 1 << 16
    qs = rns.ntt_primes(30, 5, n)
    primes = qs + rns.ntt_primes(31, 2, n, exclude=qs)
    qrows, prows, drop = (0, 1, 2, 3, 4), (5, 6), (1, 3)
    ring = put(rns.make_context(primes, n))
    tables = put(rlwe.make_hybrid_tables(primes, qrows, prows, alpha=2))
    r = HostRandom.insecure_deterministic(13)
    s = ops.ntt(jnp.asarray(rns.to_residues(r.ternary((2, n)), primes)), ring)
    key = put(rlwe.gen_switching_key(ring, s[0], s[1], num_q=5, alpha=2, sigma=3.2, rng=r))
    x = put(jnp.asarray(r.uniform_mod(qs, n)))                                            # [5, N]
    add = put(jnp.asarray(np.moveaxis(r.uniform_mod(qs, (2, n)), 0, 1))) if with_add else None  # [2, 5, N]
    y = rlwe.key_inner_product(rlwe.mod_up(x, ring, tables), key, ring, tables)            # [2, 7, N]
    if with_add:
        y = ops.add_mod(y, rlwe.keyswitch.lift_extended(add, ring, tables), ring, tables.ext_rows)
    want = rlwe.keyswitch.mod_down_divide(y, ring, tables, drop)
    got = rlwe.keyswitch.key_switch_divide(x, key, ring, tables, drop, add=add)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
