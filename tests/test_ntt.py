"""NTT / INTT: bit-exact against the Python-integer definition, on every backend."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import ops, rns
from jax_fhe.ops.ntt import ROW_GROUP_SIZE, row_groups

import reference as ref
from conftest import random_residues

LOG_NS = list(range(10, 17))
PRIME_SETS = {
    "30bit": lambda n: rns.ntt_primes(30, 3, n),
    "31bit": lambda n: rns.ntt_primes(31, 2, n),                      # just below 2^31
    "mixed": lambda n: rns.ntt_primes(25, 1, n) + rns.ntt_primes(29, 1, n, congruent_to=1 << 18),
    # one launch with 30-bit and 31-bit primes (canonical butterflies for all)
    "30+31bit": lambda n: rns.ntt_primes(30, 2, n) + rns.ntt_primes(31, 1, n),
}


def _psi(ctx, t):
    # psi_table[k] = psi^brev(k) and brev(N/2) = 1, so psi = psi_table[N/2]
    return int(ctx.psi[t, ctx.n // 2])


def _slots(rng, n, count=12):
    return sorted({0, 1, n // 2, n - 1, *rng.integers(0, n, count).tolist()})


@pytest.mark.parametrize("log_n", LOG_NS)
@pytest.mark.parametrize("primes", PRIME_SETS)
def test_ntt_matches_definition(log_n, primes, device, put, rng):
    n = 1 << log_n
    ps = PRIME_SETS[primes](n)
    ctx = put(rns.make_context(ps, n))
    x = random_residues(rng, ps, n, batch=(2,))
    y = np.asarray(ops.ntt(put(jnp.asarray(x)), ctx))
    assert y.dtype == np.uint32 and y.shape == x.shape
    b = 1
    for t, q in enumerate(ps):
        psi = _psi(ctx, t)
        assert pow(psi, n, q) == q - 1  # a primitive 2N-th root
        coeffs = x[b, t].tolist()
        for k in _slots(rng, n):
            assert int(y[b, t, k]) == ref.ntt_slot(coeffs, k, q, psi), (t, k)
    assert np.all(y < np.array(ps, dtype=np.uint32)[:, None])


@pytest.mark.parametrize("log_n", LOG_NS)
def test_intt_matches_definition(log_n, device, put, rng):
    n = 1 << log_n
    ps = rns.ntt_primes(31, 2, n)
    ctx = put(rns.make_context(ps, n))
    evals = random_residues(rng, ps, n)
    x = np.asarray(ops.intt(put(jnp.asarray(evals)), ctx))
    for t, q in enumerate(ps):
        psi = _psi(ctx, t)
        e = evals[t].tolist()
        for i in _slots(rng, n, count=4):
            assert int(x[t, i]) == ref.intt_coeff(e, i, q, psi), (t, i)


@pytest.mark.parametrize("log_n", [15, 16])
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("primes", ["30bit", "30+31bit"])
def test_rows_phase_both_directions(log_n, batch, primes, device, put, rng):
    # one or two polynomials per prime, lazy and canonical butterflies: the GPU's rows phase
    # computes its twiddles (ntt_device.cuh, compute_row_twiddles) instead of reading them
    n = 1 << log_n
    ps = PRIME_SETS[primes](n)
    ctx = put(rns.make_context(ps, n))
    x = random_residues(rng, ps, n, batch=(batch,))
    y = np.asarray(ops.ntt(put(jnp.asarray(x)), ctx))
    z = np.asarray(ops.intt(put(jnp.asarray(x)), ctx))
    b = batch - 1
    for t, q in enumerate(ps):
        psi = _psi(ctx, t)
        coeffs, evals = x[b, t].tolist(), x[b, t].tolist()
        for k in _slots(rng, n, count=4):
            assert int(y[b, t, k]) == ref.ntt_slot(coeffs, k, q, psi), (t, k)
            assert int(z[b, t, k]) == ref.intt_coeff(evals, k, q, psi), (t, k)


@pytest.mark.parametrize("log_n", LOG_NS)
@pytest.mark.parametrize("primes", PRIME_SETS)
def test_round_trip_is_identity(log_n, primes, device, put, rng):
    n = 1 << log_n
    ps = PRIME_SETS[primes](n)
    ctx = put(rns.make_context(ps, n))
    x = random_residues(rng, ps, n, batch=(3,))
    xd = put(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(ops.intt(ops.ntt(xd, ctx), ctx)), x)
    np.testing.assert_array_equal(np.asarray(ops.ntt(ops.intt(xd, ctx), ctx)), x)


@pytest.mark.parametrize("value", ["zero", "one", "q-1"])
def test_edge_polynomials(value, device, put):
    n = 1 << 12
    ps = rns.ntt_primes(31, 2, n)
    ctx = put(rns.make_context(ps, n))
    q = np.array(ps, dtype=np.uint64)[:, None]
    x = {"zero": np.zeros((2, n)), "one": np.ones((2, n)), "q-1": np.broadcast_to(q - 1, (2, n))}[value]
    x = np.asarray(x, dtype=np.uint32)
    y = np.asarray(ops.ntt(put(jnp.asarray(x)), ctx))
    for t, qt in enumerate(ps):
        psi = _psi(ctx, t)
        for k in (0, 7, n - 1):
            assert int(y[t, k]) == ref.ntt_slot(x[t].tolist(), k, qt, psi)
    np.testing.assert_array_equal(np.asarray(ops.intt(jnp.asarray(y), ctx)), x)
    if value == "zero":
        assert not y.any()


@pytest.mark.parametrize("log_n", LOG_NS)
def test_pointwise_product_is_negacyclic_convolution(log_n, device, put, rng):
    n = 1 << log_n
    ps = rns.ntt_primes(30, 2, n)
    ctx = put(rns.make_context(ps, n))
    a = random_residues(rng, ps, n)
    # b: sparse (12 random terms incl. the wrap-around-heavy top coefficient) so the
    # schoolbook reference stays fast at N = 2^16
    b = np.zeros_like(a)
    idx = np.unique(np.concatenate([[0, n - 1], rng.integers(0, n, 10)]))
    for t, q in enumerate(ps):
        b[t, idx] = rng.integers(0, q, idx.size, dtype=np.uint64).astype(np.uint32)
    A, B = ops.ntt(put(jnp.asarray(a)), ctx), ops.ntt(put(jnp.asarray(b)), ctx)
    c = np.asarray(ops.intt(ops.mul_mod(A, B, ctx), ctx))
    for t, q in enumerate(ps):
        assert c[t].tolist() == ref.negacyclic_mul(a[t].tolist(), b[t].tolist(), q)


def test_dense_negacyclic_product_small_n(device, put, rng):
    n = 1024
    ps = rns.ntt_primes(31, 1, n)
    ctx = put(rns.make_context(ps, n))
    a, b = random_residues(rng, ps, n), random_residues(rng, ps, n)
    A, B = ops.ntt(put(jnp.asarray(a)), ctx), ops.ntt(put(jnp.asarray(b)), ctx)
    c = np.asarray(ops.intt(ops.mul_mod(A, B, ctx), ctx))
    assert c[0].tolist() == ref.negacyclic_mul(a[0].tolist(), b[0].tolist(), ps[0])


def test_rows_select_table_primes(device, put, rng):
    n = 2048
    ps = rns.ntt_primes(30, 5, n)
    ctx = put(rns.make_context(ps, n))
    rows = (4, 1, 3)
    sub = put(rns.make_context([ps[r] for r in rows], n))
    x = put(jnp.asarray(random_residues(rng, [ps[r] for r in rows], n, batch=(2,))))
    np.testing.assert_array_equal(np.asarray(ops.ntt(x, ctx, rows=rows)), np.asarray(ops.ntt(x, sub)))
    np.testing.assert_array_equal(np.asarray(ops.intt(x, ctx, rows=rows)), np.asarray(ops.intt(x, sub)))


def test_row_groups_partition_repeated_rows():
    rows = (2, 0, 2, 1, 2, 0, 2, 2)
    groups = row_groups(rows).reshape(-1, ROW_GROUP_SIZE).tolist()
    # every limb once, grouped by row (at most four per group, padded with -1)
    assert groups == [[0, 2, 4, 6], [7, -1, -1, -1], [1, 5, -1, -1], [3, -1, -1, -1]]
    assert row_groups((0, 1, 2)).size == 0      # no repeats: no groups
    assert row_groups((0, 0, 1, 2, 3)).reshape(-1, ROW_GROUP_SIZE).tolist() == [
        [0, 1, -1, -1], [2, -1, -1, -1], [3, -1, -1, -1], [4, -1, -1, -1]]


# Repeated rows take the gathered rows phase on the GPU at N = 2^16 where the batch does not give
# P = 4 (batch 1, 2, 3); each limb must equal its transform on its own (one limb, plain path).
# 30-bit primes run the lazy kernel (as ModUp's basis rows would alone), 30+31-bit the canonical.
@pytest.mark.parametrize("log_n, batch", [(11, 1), (16, 1), (16, 2), (16, 3), (16, 4)])
@pytest.mark.parametrize("primes", ["30bit", "30+31bit"])
def test_repeated_rows_equal_each_limb_alone(log_n, batch, primes, device, put, rng):
    n = 1 << log_n
    ps = rns.ntt_primes(30, 4, n) if primes == "30bit" else rns.ntt_primes(30, 2, n) + rns.ntt_primes(31, 2, n)
    ctx = put(rns.make_context(ps, n))
    # interleaved, ModUp-like: row 0 five times (groups of 4 and 1), row 1 six times (4 and 2),
    # row 2 three times, row 3 four times: every group size's code path runs
    rows = (0, 1, 2, 3, 1, 0, 3, 2, 0, 2, 1, 3, 3, 1, 0, 1, 0, 1)
    sizes = sorted(int((g >= 0).sum()) for g in row_groups(rows).reshape(-1, ROW_GROUP_SIZE))
    assert sizes == [1, 2, 3, 4, 4, 4]
    x = random_residues(rng, [ps[r] for r in rows], n, batch=(batch,))
    x[0, 0, :4] = 0
    x[-1, 1, :4] = [ps[rows[1]] - 1, 1, 0, ps[rows[1]] - 1]
    y = np.asarray(jax.jit(lambda v: ops.ntt(v, ctx, rows))(put(jnp.asarray(x))))
    for l, r in enumerate(rows):
        alone = np.asarray(ops.ntt(put(jnp.asarray(x[:, l:l + 1])), ctx, (r,)))[:, 0]
        np.testing.assert_array_equal(y[:, l], alone, err_msg=f"limb {l} (row {r})")
    # and the vmapped call (a leading batch axis) equals the batched one
    vm = np.asarray(jax.vmap(lambda v: ops.ntt(v, ctx, rows))(put(jnp.asarray(x))))
    np.testing.assert_array_equal(vm, y)


def test_default_rows_compile_to_a_constant_not_an_iota():
    """Rows 0..L-1 travel as a constant: XLA rewrites a rank-1 increasing constant into an iota
    instruction, which on the GPU is one more kernel launch before the transform."""
    n = 1024
    ctx = rns.make_context(rns.ntt_primes(30, 4, n), n)
    hlo = jax.jit(lambda v: ops.intt(ops.ntt(v, ctx), ctx)).lower(jnp.zeros((4, n), jnp.uint32)).compile().as_text()
    assert not any(" iota(" in line for line in hlo.splitlines())


def test_handler_rejects_bad_row_groups(device, put):
    n = 1024
    ps = rns.ntt_primes(30, 2, n)
    ctx = put(rns.make_context(ps, n))
    x = put(jnp.zeros((3, n), jnp.uint32))
    call = jax.ffi.ffi_call("jax_fhe_ntt_forward", jax.ShapeDtypeStruct(x.shape, x.dtype))
    rows = np.array([0, 1, 0], np.int32)

    def run(groups):
        jax.block_until_ready(call(x, rows, ctx.moduli, ctx.psi, ctx.psi_shoup, lazy=True,
                                   row_groups=np.asarray(groups, np.int32)))

    run([0, 2, -1, -1, 1, -1, -1, -1])  # valid
    run([2, 0, -1, -1, 1, -1, -1, -1])  # valid: a group's limbs in any order
    for groups, msg in [([0, 2, -1], "groups of 4"),
                        ([0, 2, -1, -1], "every limb exactly once"),            # limb 1 missing
                        ([0, 2, 0, -1, 1, -1, -1, -1], "every limb exactly once"),
                        ([0, 2, -1, -1, 1, 3, -1, -1], "every limb exactly once"),  # out of range
                        ([0, -1, 2, -1, 1, -1, -1, -1], "pad with -1"),
                        ([0, 2, -2, -1, 1, -1, -1, -1], "pad with -1"),
                        ([-1, 0, 2, -1, 1, -1, -1, -1], "pad with -1")]:
        with pytest.raises(jax.errors.JaxRuntimeError, match=msg):
            run(groups)
    if device.platform == "cpu":  # only the CPU handler can read the rows (host memory)
        with pytest.raises(jax.errors.JaxRuntimeError, match="same row"):
            run([0, 1, -1, -1, 2, -1, -1, -1])


def test_jit_equals_eager_and_vmap_equals_loop(device, put, rng):
    n = 4096
    ps = rns.ntt_primes(31, 3, n)
    ctx = put(rns.make_context(ps, n))
    x = put(jnp.asarray(random_residues(rng, ps, n, batch=(4, 2))))
    eager = np.asarray(ops.ntt(x, ctx))
    jitted = np.asarray(jax.jit(ops.ntt)(x, ctx))
    np.testing.assert_array_equal(eager, jitted)
    # vmap over axis 1 (not the leading one), nested vmap, and a loop
    vm = np.asarray(jax.vmap(lambda v: ops.ntt(v, ctx), in_axes=1, out_axes=1)(x))
    np.testing.assert_array_equal(vm, eager)
    nested = np.asarray(jax.vmap(jax.vmap(lambda v: ops.ntt(v, ctx)))(x))
    np.testing.assert_array_equal(nested, eager)
    loop = np.stack([np.asarray(ops.ntt(x[i], ctx)) for i in range(x.shape[0])])
    np.testing.assert_array_equal(loop, eager)
    inv = jax.jit(jax.vmap(lambda v: ops.intt(v, ctx)))(jnp.asarray(eager))
    np.testing.assert_array_equal(np.asarray(inv), np.asarray(x))


def test_bad_inputs_raise_clear_errors():
    n = 1024
    ps = rns.ntt_primes(30, 2, n)
    ctx = rns.make_context(ps, n)
    good = jnp.zeros((2, n), jnp.uint32)
    with pytest.raises(TypeError, match="uint32"):
        ops.ntt(jnp.zeros((2, n), jnp.int32), ctx)
    with pytest.raises(TypeError, match="uint32"):
        ops.intt(np.zeros((2, n), np.float32), ctx)
    with pytest.raises(ValueError, match=r"\[\.\.\., L, N\]"):
        ops.ntt(jnp.zeros((n,), jnp.uint32), ctx)
    with pytest.raises(ValueError, match="power of two"):
        ops.ntt(jnp.zeros((2, 1000), jnp.uint32), ctx)
    with pytest.raises(ValueError, match="out of range"):
        ops.ntt(jnp.zeros((2, 1 << 17), jnp.uint32), ctx)
    with pytest.raises(ValueError, match="built for N=1024"):
        ops.ntt(jnp.zeros((2, 2048), jnp.uint32), ctx)
    with pytest.raises(ValueError, match="only 2 primes"):
        ops.ntt(jnp.zeros((3, n), jnp.uint32), ctx)
    with pytest.raises(ValueError, match="out of range"):
        ops.ntt(good, ctx, rows=(0, 2))
    with pytest.raises(ValueError, match="rows has 1"):
        ops.ntt(good, ctx, rows=(0,))
    with pytest.raises(TypeError, match="RNSContext"):
        ops.ntt(good, {"psi": 1})
    # a context with a batch axis is caught by the handler (it cannot be seen at trace time)
    with pytest.raises(jax.errors.JaxRuntimeError, match="batch axis"):
        jax.block_until_ready(  # on the GPU the handler's error surfaces when the result is awaited
            jax.vmap(ops.ntt)(jnp.stack([good, good]), jax.tree.map(lambda a: jnp.stack([a, a]), ctx)))


def test_handler_rejects_mismatched_tables_directly():
    """The C++ handler checks shapes itself, even when the Python checks are bypassed."""
    n = 1024
    ps = rns.ntt_primes(30, 2, n)
    ctx = rns.make_context(ps, n)
    x = jnp.zeros((2, n), jnp.uint32)
    call = jax.ffi.ffi_call("jax_fhe_ntt_forward", jax.ShapeDtypeStruct(x.shape, x.dtype))
    with pytest.raises(Exception, match="twiddles"):  # awaited: GPU errors surface there
        jax.block_until_ready(
            call(x, np.arange(2, dtype=np.int32), ctx.moduli, ctx.psi[:, : n // 2], ctx.psi_shoup,
                 lazy=True, row_groups=np.zeros(0, np.int32)))
    cpu = jax.devices("cpu")[0]  # only the CPU handler can read the row indices (host memory)
    with pytest.raises(Exception, match="row index out of range"):
        jax.block_until_ready(call(jax.device_put(x, cpu), np.array([0, 5], np.int32),
                                   *jax.device_put((ctx.moduli, ctx.psi, ctx.psi_shoup), cpu), lazy=True,
                                   row_groups=np.zeros(0, np.int32)))


@pytest.mark.parametrize("log_n, batch", [(10, 3), (12, 1), (12, 2), (12, 4), (13, 2), (16, 4), (16, 22)])
@pytest.mark.parametrize("primes", ["30bit", "31bit"])
def test_ntt_lift_equals_ntt_of_residues(log_n, batch, primes, device, put, rng):
    """ntt_lift(x) == ntt(x mod q_l per limb) bit for bit, for digits up to +-(2^17) and the
    extremes -(q_min - 1), q_min - 1: the one-block GPU kernel lifts on load (N <= 4096, 30-bit
    primes, P = 1, 2), other shapes lift in a separate pass (at N = 2^16, batch 22: 132
    polynomials, on sm_90 the cluster kernel); jit and vmap included."""
    n = 1 << log_n
    ps = PRIME_SETS[primes](n)
    ctx = put(rns.make_context(ps, n))
    x = rng.integers(-(1 << 17), 1 << 17, size=(batch, 2, n)).astype(np.int32)
    qmin = min(ps)
    x[0, 0, :4] = [qmin - 1, -(qmin - 1), 0, -1]
    lifted = np.stack([np.where(x < 0, x.astype(np.int64) + q, x).astype(np.uint32) for q in ps], axis=-2)
    want = np.asarray(ops.ntt(put(jnp.asarray(lifted)), ctx))
    got = jax.jit(lambda v, c: ops.ntt_lift(v, c))(put(jnp.asarray(x)), ctx)
    assert got.dtype == np.uint32 and got.shape == (batch, 2, len(ps), n)
    np.testing.assert_array_equal(np.asarray(got), want)
    vm = jax.vmap(lambda v: ops.ntt_lift(v, ctx))(put(jnp.asarray(x)))
    np.testing.assert_array_equal(np.asarray(vm), want)
    sub = ops.ntt_lift(put(jnp.asarray(x)), ctx, rows=[len(ps) - 1])
    np.testing.assert_array_equal(np.asarray(sub), want[..., -1:, :])


def test_ntt_lift_rejects_bad_input():
    n = 1 << 10
    ps = rns.ntt_primes(30, 2, n)
    ctx = rns.make_context(ps, n)
    with pytest.raises(TypeError, match="int32"):
        ops.ntt_lift(jnp.zeros((2, n), jnp.uint32), ctx)
    with pytest.raises(ValueError, match="N=2048"):
        ops.ntt_lift(jnp.zeros((2, 2048), jnp.int32), ctx)
    with pytest.raises(ValueError, match="power of two"):
        ops.ntt_lift(jnp.zeros((2, 1000), jnp.int32), ctx)
    with pytest.raises(ValueError, match="limbs"):
        ops.ntt_lift(jnp.zeros((2, n), jnp.int32), ctx, limbs=3)
    with pytest.raises(ValueError, match="rows"):
        ops.ntt_lift(jnp.zeros((2, n), jnp.int32), ctx, limbs=1, rows=[0, 1])
    big = jnp.full((1, n), min(ps), jnp.int32)  # |x| = q: not a small value for that prime
    with pytest.raises(Exception, match="below every prime"):
        jax.block_until_ready(jax.device_put(ops.ntt_lift(jax.device_put(big, jax.devices("cpu")[0]),
                                                           jax.device_put(ctx, jax.devices("cpu")[0]))))
