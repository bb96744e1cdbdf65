"""Private dataset queries (jax_fhe.apps.pdq): the query language, the bit-plane layout, the
plaintext reference, and encrypted queries on the INSECURE toy presets against it: Index, Count
and Sum exact (the decrypted values round to the reference's integers), Avg exact through the
exact Sum and Count and within the stated bound through the two-party inverse, a / b^2 within
its bound. The default run has one encrypted query (a Sum on edge values, ~25 s here); the
four CAT queries, constants, or/not, several chunks, Newton and 20 random tables are `slow`."""
import fractions

import numpy as np
import pytest

from jax_fhe import ckks
from jax_fhe.apps import pdq
from jax_fhe.rns import HostRandom

A, B, C, D, E = map(pdq.col, "abcde")
TOP = 2 ** 32 - 1
FAST = {"xla_backend_optimization_level": 0}  # ~40% less CPU compile time, same run time


# -- host-side pieces ------------------------------------------------------------------------------

def test_query_language():
    q = pdq.where((A <= B) & (C != D)).index()
    assert str(q) == "Index() where (a <= b and c != d)"
    assert q.columns() == {"a", "b", "c", "d"} and not q.interactive
    assert pdq.where((B <= C) & (D == E)).avg("a").interactive
    assert str(pdq.where(~(A > 3) | (B == 7)).ratio("a", "b")) == "a / b^2 where (not (a > 3) or b == 7)"
    assert pdq.where().count().pred is None
    assert hash(pdq.where(A <= B).sum("c")) == hash(pdq.where(A <= B).sum("c"))  # a static key
    assert (A <= B).depth(5) == 6 and (A <= 3).depth(5) == 6 and ((A <= B) & (C == 1)).depth(5) == 7
    with pytest.raises(TypeError, match="truth value"):
        bool(A <= B)
    with pytest.raises(TypeError, match="column with a column or an int"):
        A <= 1.5
    with pytest.raises(TypeError, match="expected a predicate"):
        (A <= B) & 3
    with pytest.raises(ValueError, match="column name"):
        pdq.col("")
    with pytest.raises(ValueError, match="expected 1 column"):
        pdq.Query("sum", A <= B)
    with pytest.raises(ValueError, match="den_range"):
        pdq.where(A <= B).ratio("a", "b", inverse="newton")
    with pytest.raises(ValueError, match="unknown kind"):
        pdq.Query("median")


def test_layout_bit_planes_round_trip():
    lay = pdq.Layout(rows=50, slots=1024)
    assert (lay.rows_per_ct, lay.chunks, lay.log_bits) == (32, 2, 5)
    assert lay.block_steps() == (32, 64, 128, 256, 512) and lay.row_steps() == (1, 2, 4, 8, 16)
    v = np.random.default_rng(0).integers(0, 2 ** 32, 50)
    v[:3] = [0, TOP, 1 << 31]
    planes = pdq.bit_planes(v, lay)
    assert planes.shape == (2, 1024) and set(np.unique(planes)) <= {0.0, 1.0}
    assert planes[0, 31 * 32 + 2] == 1 and planes[0, 30 * 32 + 2] == 0  # bit 31 of 2^31, row 2
    np.testing.assert_array_equal(pdq.from_bit_planes(planes, lay), v)
    assert lay.valid().sum() == 50
    with pytest.raises(ValueError, match=r"\[0, 2\^32\)"):
        pdq.bit_planes(np.full(50, 2 ** 32), lay)
    with pytest.raises(ValueError, match="expected 50 values"):
        pdq.bit_planes(np.zeros(49, int), lay)
    with pytest.raises(TypeError, match="integers"):
        pdq.bit_planes(np.full(50, 0.5), lay)
    with pytest.raises(ValueError, match="powers of two"):
        pdq.Layout(rows=4, slots=1000)


def test_reference_is_sql():
    g = np.random.default_rng(1)
    cols = {k: g.integers(0, 8, 200) for k in "abcde"}
    q = pdq.where((B <= C) & (D == E)).avg("a")
    ref = pdq.reference(q, cols)
    rows = [i for i in range(200) if cols["b"][i] <= cols["c"][i] and cols["d"][i] == cols["e"][i]]
    assert list(ref["index"]) == rows and ref["count"] == len(rows)
    assert ref["sum"] == sum(int(cols["a"][i]) for i in rows)
    assert ref["avg_exact"] == fractions.Fraction(ref["sum"], len(rows))
    assert pdq.reference(pdq.where(A > 8).avg("a"), cols)["avg_exact"] is None
    r = pdq.reference(pdq.where(A < 4).ratio("a", "b"), cols)["ratio"]
    ok = (cols["a"] < 4) & (cols["b"] != 0)
    np.testing.assert_allclose(r[ok], cols["a"][ok] / cols["b"][ok] ** 2)
    assert np.isnan(r[~ok]).all()
    exact = pdq.reference(pdq.where(A < 4).ratio("a", "b"), cols)["ratio_exact"]
    assert exact == [fractions.Fraction(int(x), int(y) ** 2) if k else None
                     for x, y, k in zip(cols["a"], cols["b"], ok)]


# -- encrypted queries -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def toy():
    p = pdq.preset("toy-n11")
    ctx = ckks.make_context(p)
    rng = HostRandom.insecure_deterministic(42)
    return ctx, rng, pdq.Client(ctx, 32, rng=rng, level=p.max_level)


def _edge_table(rows, seed):
    """Random 32-bit columns with edge values: equal columns, 0, 2^32 - 1."""
    g = np.random.default_rng(seed)
    cols = {k: g.integers(0, 2 ** 32, rows, dtype=np.int64) for k in "abcde"}
    cols["b"][: rows // 4] = cols["c"][: rows // 4]      # b == c: b <= c holds
    cols["d"][::3] = cols["e"][::3]                       # d == e
    cols["a"][:4] = [0, TOP, TOP, 1]
    cols["b"][4:8] = [0, TOP, 0, TOP]
    cols["c"][4:8] = [0, TOP, TOP, 0]
    cols["d"][8:10], cols["e"][8:10] = [TOP, 0], [TOP - 1, 1]
    return cols


def _ratio_table(rows, seed):
    """The edge table with PDQ-3's divisor b in [2^12, 2^16) and zeros (the documented range)."""
    cols = _edge_table(rows, seed)
    g = np.random.default_rng(seed + 7)
    cols["b"] = g.integers(1 << 12, 1 << 16, rows)
    cols["b"][[3, 17]] = 0
    cols["c"][:8] = cols["b"][:8]
    return cols


def _check(ans, ref, q, *, inverse_bound=True):
    if q.kind in ("index", "ratio"):
        np.testing.assert_array_equal(ans.index, ref["index"])
        assert ans.mask_error < 2 ** -10
    if q.kind in ("count", "sum", "avg"):
        assert ans.count == ref["count"] and ans.count_error < 2 ** -10
    if q.kind in ("sum", "avg"):
        assert ans.sum == ref["sum"] and ans.sum_error < 2 ** -10
    if q.kind == "avg":
        assert ans.avg_exact == ref["avg_exact"]
        if ref["count"]:
            # the encrypted inverse path: relative error within 2^-20 (measured ~2^-30)
            assert abs(ans.avg - float(ref["avg_exact"])) <= 2 ** -20 * float(ref["avg_exact"]) + 2 ** -20
        else:
            assert ans.avg is None
    if q.kind == "ratio":
        # exact: the Fractions of the filtered operands (their bits round to 0/1 like Sum's)
        assert ans.ratio_exact == ref["ratio_exact"] and ans.operand_error < 2 ** -10
        if inverse_bound:   # the encrypted inverse's floats, on a moderate divisor range
            ok = ~np.isnan(ref["ratio"])
            np.testing.assert_array_equal(ok, ~np.isnan(ans.ratio))
            np.testing.assert_allclose(ans.ratio[ok], ref["ratio"][ok], rtol=2 ** -20, atol=2 ** -20)


def _run(q, cols, toy, compiled=None, *, inverse_bound=True):
    ctx, rng, client = toy
    table = client.encrypt_table(cols)
    cq = compiled or pdq.compile_query(q, table, ctx, client.evaluation_keys, compiler_options=FAST)
    ans = client.decrypt(pdq.execute(cq, table, client, client.evaluation_keys, rng=rng))
    _check(ans, pdq.reference(q, cols), q, inverse_bound=inverse_bound)
    return ans, cq


def test_sum_exact_on_edge_values(toy):
    """Sum(a) where b <= c (PDQ-2 without its second filter; the whole of PDQ-2 is in the slow
    tests): the 32 bit-block sums and the count round to the exact integers, with equal
    columns, 0 and 2^32 - 1 in the table."""
    q = pdq.where(B <= C).sum("a")
    ans, cq = _run(q, _edge_table(32, 0), toy)
    assert cq.levels == {"agg": 12 - 8}
    assert ans.sum > 2 ** 32 and ans.sum_error < 2 ** -20 and ans.timings["server"] > 0


def test_ratio_exact_over_the_full_range(toy):
    """PDQ-3 (a / b^2 where b <= c) with a, b over the whole [0, 2^32) range, 0, 1 and 2^32 - 1
    among the divisors and the numerators: the answer's Fractions equal the plaintext's exactly
    (every fractional bit), on two random tables through one compiled program. (The encrypted
    inverse's floats cannot hold this range: r b^2 spans 2^80 in one slot vector.)"""
    q = pdq.where(B <= C).ratio("a", "b")
    cq = None
    for seed in (11, 12):
        g = np.random.default_rng(seed)
        cols = {k: g.integers(0, 2 ** 32, 32, dtype=np.int64) for k in "abc"}
        cols["b"][:6], cols["a"][:6], cols["c"][:6] = [0, TOP, 1, 2, TOP, 1 << 31], [TOP, TOP, TOP, 0, 1, 3], TOP
        ans, cq = _run(q, cols, toy, cq, inverse_bound=False)
        assert ans.ratio_exact[2] == TOP and ans.ratio_exact[4] == fractions.Fraction(1, TOP ** 2)
        assert ans.ratio_exact[0] is None and sum(r is not None for r in ans.ratio_exact) > 6


def test_compile_errors(toy):
    ctx, _, client = toy
    table = client.encrypt_table({"a": np.arange(32), "b": np.arange(32)})
    with pytest.raises(ValueError, match=r"unknown column\(s\) \['z'\]"):
        pdq.compile_query(pdq.where(A <= pdq.col("z")).count(), table, ctx, client.evaluation_keys)
    deep = (A <= B) & (B <= A) & (A == B) & (A != B) & (A < B) & (B > A) & (A >= B)
    with pytest.raises(ValueError, match="needs 1[0-9] levels"):
        pdq.compile_query(pdq.where(deep).sum("a"), table, ctx, client.evaluation_keys)
    with pytest.raises(TypeError, match="expected a Query"):
        pdq.compile_query(A <= B, table, ctx, client.evaluation_keys)
    with pytest.raises(ValueError, match="non-empty dict"):
        client.encrypt_table({})
    with pytest.raises(ValueError, match="column 'a'"):
        client.encrypt_table({"a": np.full(32, -1)})


CAT_QUERIES = {
    "PDQ-1": pdq.where((A <= B) & (C != D)).index(),
    "PDQ-2": pdq.where((B <= C) & (D != E)).sum("a"),
    "PDQ-3": pdq.where(B <= C).ratio("a", "b"),
    "PDQ-4": pdq.where((B <= C) & (D == E)).avg("a"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CAT_QUERIES))
def test_cat_queries_edges_and_random_tables(toy, name):
    """CAT's four queries on the edge table, a table where every row passes, one where none
    does, and 20 random tables (one compiled program, reused)."""
    q = CAT_QUERIES[name]
    tables = (lambda s: _ratio_table(32, s)) if name == "PDQ-3" else (lambda s: _edge_table(32, s))
    ans, cq = _run(q, tables(1), toy)
    g = np.random.default_rng(7)
    base = {k: g.integers(1, 2 ** 32, 32, dtype=np.int64) for k in "abcde"}
    every = dict(base, b=np.zeros(32, np.int64), c=np.full(32, TOP), d=base["d"], e=base["d"] + 1 - 2 * (base["d"] & 1))
    if name == "PDQ-4":
        every["e"] = every["d"]
    if name == "PDQ-1":
        every = dict(base, a=np.zeros(32, np.int64), b=np.full(32, TOP), d=base["c"] ^ 1)
    none = dict(base, b=np.full(32, TOP), c=np.zeros(32, np.int64))       # b <= c never
    if name == "PDQ-1":
        none = dict(base, a=np.full(32, TOP), b=np.full(32, TOP - 1))         # a <= b never
    a_every, _ = _run(q, every, toy, cq)
    assert len(a_every.index if a_every.index is not None else range(a_every.count)) == 32
    a_none, _ = _run(q, none, toy, cq)
    assert (a_none.count if a_none.count is not None else len(a_none.index)) == 0
    for seed in range(20):
        _run(q, tables(100 + seed), toy, cq)


@pytest.mark.slow
@pytest.mark.parametrize("q", [
    pdq.where((A > 2 ** 31) | (B == 12345)).count(),
    pdq.where((A < 1 << 20) | (B >= TOP)).sum("c"),
    pdq.where(~(A <= 0) & (C != TOP)).index(),
    pdq.where().sum("a"),
], ids=["gt-or-eq-const", "lt-or-ge-const", "not-ne-const", "no-filter"])
def test_constants_or_not(toy, q):
    cols = _edge_table(32, 3)
    cols["b"][5:9] = 12345
    cols["a"][9:12] = [2 ** 31, 2 ** 31 + 1, (1 << 20) - 1]
    _run(q, cols, toy)


@pytest.mark.slow
def test_several_chunks():
    """80 rows on toy-n11 (32 rows per ciphertext): 3 chunks per column, vmapped; the chunk
    sums happen before the row sums."""
    p = pdq.preset("toy-n11")
    ctx = ckks.make_context(p)
    rng = HostRandom.insecure_deterministic(5)
    client = pdq.Client(ctx, 80, rng=rng, level=p.max_level)
    assert client.layout.chunks == 3
    cols = _edge_table(80, 4)
    for q in (CAT_QUERIES["PDQ-2"], CAT_QUERIES["PDQ-4"], CAT_QUERIES["PDQ-1"]):
        _run(q, cols, (ctx, rng, client))


@pytest.mark.slow
def test_ratio_zero_divisor_and_newton(toy):
    """a / b^2 with b = 0 rows (NaN, flagged by the client) and the non-interactive Newton
    inverse for b in a known range (heights in mm: b^2 in [1400^2, 2100^2])."""
    cols = _ratio_table(32, 9)
    cols["b"][10:13] = 0
    _run(CAT_QUERIES["PDQ-3"], cols, toy)
    g = np.random.default_rng(2)
    bmi = {"a": g.integers(40_000, 150_000, 32), "b": g.integers(1400, 2100, 32), "c": g.integers(0, 2 ** 32, 32)}
    q = pdq.where(B <= C).ratio("a", "b", inverse="newton", den_range=(1400.0 ** 2, 2100.0 ** 2))
    ctx, rng, client = toy
    table = client.encrypt_table(bmi)
    cq = pdq.compile_query(q, table, ctx, client.evaluation_keys, compiler_options=FAST)
    ans = client.decrypt(pdq.execute(cq, table, client, client.evaluation_keys, rng=rng))
    ref = pdq.reference(q, bmi)
    ok = ~np.isnan(ref["ratio"])
    np.testing.assert_allclose(ans.ratio[ok], ref["ratio"][ok], rtol=2 ** -20)
