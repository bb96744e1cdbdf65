"""benchmarks/bench_bfv_bgv.py: the HBM floors' byte counts match the hand count of its
docstring, the "rotate random" step decomposes as SEAL's keys need, and a --quick run (CPU,
toy-n12) writes well-formed results that results_page.py renders as the "BFV and BGV" table."""
import json
import re
import shutil

import pytest

from jax_fhe import bfv, bgv

from conftest import benchmarks_importable


@pytest.fixture(scope="module")
def bench():
    with benchmarks_importable():
        import bench_bfv_bgv
        import results
        import results_page
        yield bench_bfv_bgv, results, results_page


def test_floor_bytes_by_hand(bench):
    mod, _, _ = bench
    for scheme in ("bfv", "bgv"):
        p = {"bfv": bfv, "bgv": bgv}[scheme].preset("cat-n15")
        level = p.max_level if scheme == "bgv" else 0
        limbs, n = len(p.rows(level)), p.n
        assert (limbs, n) == (24, 1 << 15)
        poly = 24 * 32768 * 4
        assert poly == 3_145_728
        want = {"add": 6 * poly, "multiply_plain": 5 * poly, "multiply": 7 * poly, "square": 5 * poly}
        for op in mod.OPS:
            got = mod.floor_bytes(op, scheme, limbs, n)
            if (scheme, op) in mod.ELEMENTWISE:
                assert got == want[op], (scheme, op)
            else:
                assert got is None, (scheme, op)      # not element-wise: no floor
    table = {"add": 18_874_368, "multiply_plain": 15_728_640, "multiply": 22_020_096, "square": 15_728_640}
    doc = mod.__doc__.replace(",", "")
    for op, nbytes in table.items():
        assert nbytes == mod.floor_bytes(op, "bgv", 24, 1 << 15)
        assert re.search(rf"= {nbytes} B", doc), op                    # the docstring's hand count


def test_naf(bench):
    mod, _, _ = bench
    assert mod.naf(5000) == [4096, 1024, -128, 8]
    for k in range(1, 3000):
        terms = mod.naf(k)
        assert sum(terms) == k
        bits = sorted(abs(t).bit_length() for t in terms)
        assert all(b - a >= 2 for a, b in zip(bits, bits[1:])), k      # non-adjacent
        assert all(abs(t) & (abs(t) - 1) == 0 for t in terms)


def test_quick_run(bench, tmp_path, capsys):
    mod, results, page = bench
    out, res = tmp_path / "run.json", tmp_path / "bfv_bgv.json"
    ops = "add,multiply,rotate_one_step"     # BGV only, to stay within seconds (BFV: the same code)
    assert mod.main(["--quick", "--schemes", "bgv", "--ops", ops, "--out", str(out), "--results", str(res)]) == 0
    assert "bgv  multiply (no relinearization)" in capsys.readouterr().out
    run = json.loads(out.read_text())
    assert run["copy_bandwidth_gbs"] > 0 and run["device"]
    rows = {(r["scheme"], r["op"]): r for r in run["rows"]}
    assert set(rows) == {("bgv", o) for o in ops.split(",")}
    for (scheme, op), r in rows.items():
        assert r["us"] > 0 and r["us_per_ct_batched"] > 0 and r["batch"] == 2 and r["cat_us"] > 0
        assert r["speedup"] == pytest.approx(r["cat_us"] / r["us"])
        if (scheme, op) in mod.ELEMENTWISE:
            assert r["bytes"] == mod.floor_bytes(op, scheme, r["limbs"], r["n"])
            assert r["floor_us"] == pytest.approx(r["bytes"] / (run["copy_bandwidth_gbs"] * 1e9) * 1e6)
            assert r["ratio_batched"] == pytest.approx(r["us_per_ct_batched"] / r["floor_us"])
        else:
            assert "floor_us" not in r
    assert rows[("bgv", "add")]["level"] == bgv.preset("toy-n12").max_level

    doc = results.load(res)
    assert doc["area"] == "bfv_bgv" and len(doc["entries"]) == 3
    for e in doc["entries"]:
        scheme, op, preset = e["key"].split("/")
        assert preset == "toy-n12" and e["clock"] == "wall" and e["batched"]["batch"] == 2
        assert e["device"] and e["date"] and e["commit"] and e["unit"] == "us"
        assert e["peer"]["figure"] == f"{mod.CAT_4090_US[scheme][op]} µs" and "CAT" in e["peer"]["source"]
        if (scheme, op) in mod.ELEMENTWISE:
            assert e["floor"]["bytes"] == rows[(scheme, op)]["bytes"] and "ratio" in e and "ratio" in e["batched"]
            assert e["goal"] == "≤ 1.5× the HBM floor"
        else:
            assert "floor" not in e and "ratio" not in e
    goals = {e["key"]: e.get("goal") for e in doc["entries"]}
    assert goals["bgv/rotate_one_step/toy-n12"] == "≥ 10× faster than CAT: ≤ 298.1 µs"
    assert mod.goal_of("bfv", "multiply") == "≥ 10× faster than CAT: ≤ 367.5 µs"
    assert mod.goal_of("bfv", "rotate_columns") == "≥ 10× faster than CAT: ≤ 162.3 µs"
    assert mod.goal_of("bfv", "add") == "≤ 1.5× the HBM floor" and mod.goal_of("bfv", "encode") is None

    # the page renders the run as the "BFV and BGV" table
    for area in results.AREAS:
        if area != "bfv_bgv":
            shutil.copy(results.default_path(area), tmp_path / f"{area}.json")
    area_doc = json.loads(results.default_path("bfv_bgv").read_text())
    area_doc["entries"] = doc["entries"]
    res.write_text(json.dumps(area_doc))
    text = page.render(tmp_path)
    section = text.split("## BFV and BGV")[1]
    assert "python benchmarks/bench_bfv_bgv.py --results" in section
    assert "| BGV add |" in section and "CAT Table III, RTX 4090: 17 µs" in section


def test_quick_refuses_the_pages_file(bench):
    mod, _, _ = bench
    with pytest.raises(SystemExit):
        mod.main(["--quick", "--results"])
