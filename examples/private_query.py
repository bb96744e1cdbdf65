"""Private dataset queries (CAT's PDQ) over an encrypted table, beside the plaintext answers.

    python examples/private_query.py                 # n16-boot (GPU): 1,024 rows of people
    python examples/private_query.py --tables 20     # + CAT's PDQ-1..4 on 20 random 2^32 tables
    python examples/private_query.py --rows 65536    # 64 ciphertexts per column (vmapped)
    python examples/private_query.py --toy           # INSECURE toy-n11, 32 rows (CPU)

The data holder (client) makes the keys, encrypts a table of age / height (mm) / weight (g) /
income / savings once (every column as bit planes and as values, jax_fhe.apps.pdq) and hands the
server the encrypted table and the evaluation keys. The server answers four queries in CAT's
shapes, each compiled into jitted programs; the client decrypts:

    PDQ-1  Index() where savings <= income and age != 40
    PDQ-2  Sum(income) where savings <= income and age != 40
    PDQ-3  weight / height^2 where age <= 65           (BMI = 1000 x weight[g] / height[mm]^2)
    PDQ-4  Avg(income) where savings <= income and age == 40

PDQ-4 and PDQ-3 take one round trip to the client (the two-party blinded inverse). Prints each
answer beside the plaintext (SQL-like numpy) answer and OK / MISMATCH: Index, Count and Sum
exact, Avg exact as Sum / Count (and within 2^-20 relative through the encrypted inverse), the
ratio exact as Fractions of the filtered operands (and within 2^-20 relative through the
encrypted inverse for these heights). ``--tables N`` repeats CAT's generic PDQ-1..4 (columns
a..e, values up to 2^32 - 1 with equal columns, 0 and 2^32 - 1 planted) on N random tables:
there the ratio is checked exact (the encrypted inverse's float loses small divisors over the
whole 2^32 range; docs/pdq.md).
"""
from __future__ import annotations

import argparse
import time

import jax
import numpy as np

TOP = 2 ** 32 - 1


def people(rows: int, seed: int) -> dict:
    """A table of people: int columns (all in [0, 2^32))."""
    g = np.random.default_rng(seed)
    age = g.integers(18, 90, rows)
    age[g.random(rows) < 0.1] = 40
    height = g.integers(1450, 2050, rows)
    weight = (g.normal(0.0225, 0.004, rows).clip(0.014, 0.045) * height.astype(np.float64) ** 2).astype(np.int64)
    income = g.integers(0, 2 ** 31, rows)
    income[:2] = [0, TOP]
    savings = (income * g.random(rows) * 1.5).astype(np.int64).clip(0, TOP)
    return {"age": age, "height": height, "weight": weight, "income": income, "savings": savings}


def people_queries(pdq) -> dict:
    """The four queries on the people table."""
    age, inc, sav = pdq.col("age"), pdq.col("income"), pdq.col("savings")
    return {
        "PDQ-1": pdq.where((sav <= inc) & (age != 40)).index(),
        "PDQ-2": pdq.where((sav <= inc) & (age != 40)).sum("income"),
        "PDQ-3": pdq.where(age <= 65).ratio("weight", "height"),
        "PDQ-4": pdq.where((sav <= inc) & (age == 40)).avg("income"),
    }


def cat_queries(pdq) -> dict:
    """CAT's PDQ-1..4 on generic columns a..e (notes/cat.md §3)."""
    a, b, c, d, e = map(pdq.col, "abcde")
    return {
        "PDQ-1": pdq.where((a <= b) & (c != d)).index(),
        "PDQ-2": pdq.where((b <= c) & (d != e)).sum("a"),
        "PDQ-3": pdq.where(b <= c).ratio("a", "b"),
        "PDQ-4": pdq.where((b <= c) & (d == e)).avg("a"),
    }


def random_table(rows: int, seed: int) -> dict:
    """Columns a..e uniform in [0, 2^32) with edge values planted: b == c on a quarter of the rows,
    d == e on a third, 0 and 2^32 - 1 in every column, a zero divisor (b = 0)."""
    g = np.random.default_rng(seed)
    cols = {k: g.integers(0, 2 ** 32, rows, dtype=np.int64) for k in "abcde"}
    cols["b"][: rows // 4] = cols["c"][: rows // 4]
    cols["d"][::3] = cols["e"][::3]
    for k in "abcde":
        cols[k][g.integers(0, rows, 2)] = [0, TOP]
    return cols


def check(ans, ref, q, *, inverse_bound: bool = True) -> tuple:
    """(ok, text): the encrypted answer against the plaintext reference. The ratio: the exact
    Fractions always; the encrypted inverse's floats within 2^-20 relative on every row only
    with ``inverse_bound`` (divisors in a moderate range: over the whole 2^32 range one CKKS
    slot vector cannot hold r b^2, whose entries span 2^64; docs/pdq.md)."""
    if q.kind == "index":
        ok = np.array_equal(ans.index, ref["index"])
        return ok, f"{len(ans.index)} rows (plaintext {len(ref['index'])}), mask error 2^{np.log2(ans.mask_error + 1e-300):.1f}"
    if q.kind == "sum":
        ok = ans.sum == ref["sum"] and ans.count == ref["count"]
        return ok, f"{ans.sum} over {ans.count} rows (plaintext {ref['sum']} over {ref['count']})"
    if q.kind == "avg":
        if ref["count"] == 0:
            return ans.avg is None and ans.avg_exact is None, "no row passes (avg undefined)"
        exact = float(ref["avg_exact"])
        rel = abs(ans.avg - exact) / max(exact, 1.0)
        ok = ans.avg_exact == ref["avg_exact"] and rel <= 2 ** -20
        return ok, (f"{float(ans.avg_exact):.6f} exact (= {ans.sum} / {ans.count}), {ans.avg:.6f} via the encrypted "
                    f"inverse (relative error 2^{np.log2(rel + 1e-300):.1f}); plaintext {exact:.6f}")
    m = ~np.isnan(ref["ratio"])
    exact = ans.ratio_exact == ref["ratio_exact"]
    same = np.array_equal(m, ~np.isnan(ans.ratio))
    both = m & ~np.isnan(ans.ratio)
    rel = np.abs(ans.ratio[both] - ref["ratio"][both]) / np.maximum(np.abs(ref["ratio"][both]), 2 ** -20)
    within = int((rel <= 2 ** -20).sum())
    ok = exact and (not inverse_bound or (same and within == int(m.sum())))
    return ok, (f"{int(m.sum())} rows: exact Fractions {'equal' if exact else 'DIFFER'} (operand error "
                f"2^{np.log2(ans.operand_error + 1e-300):.1f}); encrypted inverse within 2^-20 relative on {within}")


def setup(preset: str, rows: int, seed: int = 1, progress=None):
    """(ctx, client) for ``preset`` (keys from an insecure seeded HostRandom: a demo)."""
    from jax_fhe import ckks
    from jax_fhe.apps import pdq
    from jax_fhe.rns import HostRandom
    params = pdq.preset(preset)
    ctx = ckks.make_context(params)
    client = pdq.Client(ctx, rows, rng=HostRandom.insecure_deterministic(seed), progress=progress,
                        level=params.max_level if preset.startswith("toy") else None)
    return ctx, client


def run_query(q, table, ctx, client, compiled=None, compiler_options=None):
    """(answer, compiled, seconds): compile (unless given), execute, decrypt."""
    from jax_fhe.apps import pdq
    cq = compiled or pdq.compile_query(q, table, ctx, client.evaluation_keys, compiler_options=compiler_options)
    t0 = time.perf_counter()
    res = pdq.execute(cq, table, client, client.evaluation_keys, rng=client.rng)
    t1 = time.perf_counter()
    ans = client.decrypt(res)
    ans.timings["decrypt"] = time.perf_counter() - t1
    ans.timings["total"] = time.perf_counter() - t0
    return ans, cq


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="n16-boot")
    ap.add_argument("--rows", type=int, default=None, help="table rows (default: 1,024; --toy: 32)")
    ap.add_argument("--tables", type=int, default=0, help="also run CAT's PDQ-1..4 on this many random tables")
    ap.add_argument("--toy", action="store_true", help="INSECURE toy-n11 preset, 32 rows (CPU)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from jax_fhe.apps import pdq
    if args.toy:
        args.preset = "toy-n11"
    rows = args.rows or (32 if args.toy else 1024)
    opts = {"xla_backend_optimization_level": 0} if jax.default_backend() == "cpu" else None
    t0 = time.perf_counter()
    ctx, client = setup(args.preset, rows, progress=None)
    lay = client.layout
    print(f"{ctx.params!r}\n{rows} rows: {lay.chunks} ciphertext(s) per column, {lay.rows_per_ct} rows each, "
          f"level {client.level}; keys {time.perf_counter() - t0:.1f} s; device {jax.devices()[0].device_kind}")
    data = people(rows, args.seed)
    t0 = time.perf_counter()
    table = client.encrypt_table(data)
    jax.block_until_ready(table)
    print(f"encrypted {len(data)} columns (bit planes + values) in {time.perf_counter() - t0:.2f} s\n")
    all_ok = True
    for name, q in people_queries(pdq).items():
        ans, _ = run_query(q, table, ctx, client, compiler_options=opts)  # first run: compiles
        ans, _ = run_query(q, table, ctx, client, compiled=_, compiler_options=opts)
        ok, text = check(ans, pdq.reference(q, data), q)
        all_ok &= ok
        t = ans.timings
        print(f"{name}  {q}\n       {text}\n       server {1e3 * t['server']:.1f} ms"
              + (f", client inverse {1e3 * t['client_inverse']:.1f} ms" if "client_inverse" in t else "")
              + f", decrypt {1e3 * t['decrypt']:.1f} ms: {'OK' if ok else 'MISMATCH'}")
    if args.tables:
        print(f"\nCAT's PDQ-1..4 on {args.tables} random tables (values up to 2^32 - 1, edge values planted):")
        compiled = {}
        for i in range(args.tables):
            for name, q in cat_queries(pdq).items():
                cols = random_table(rows, 1000 + i)
                tab = client.encrypt_table({k: cols[k] for k in sorted(q.columns())})
                ans, compiled[name] = run_query(q, tab, ctx, client, compiled.get(name), opts)
                ok, text = check(ans, pdq.reference(q, cols), q, inverse_bound=False)
                all_ok &= ok
                if not ok or i == 0:
                    print(f"  table {i} {name}: {text}: {'OK' if ok else 'MISMATCH'}")
        print(f"  {args.tables} tables x 4 queries done")
    print("OK" if all_ok else "MISMATCH")


if __name__ == "__main__":
    main()
