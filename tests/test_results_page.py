"""benchmarks/RESULTS.md is rendered from benchmarks/results/*.json (results_page.py): the page
in the repository is what the JSON gives, its tables are well formed, the benchmarks write
entries that replace the page's rows (same keys), and the results format refuses bad entries."""
import json
import re

import pytest

from conftest import BENCHMARKS, benchmarks_importable


@pytest.fixture(scope="module")
def bench():
    with benchmarks_importable():
        import results
        import results_page
        yield results, results_page


def _tables(text):
    """[(header cells, [row cells, ...]), ...] of every markdown table in ``text``."""
    tables, current = [], None
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if current is None:
                current = (cells, [])
                tables.append(current)
            elif not all(set(c) <= {"-"} for c in cells):
                current[1].append(cells)
        else:
            current = None
    return tables


def test_page_is_rendered_from_the_json(bench):
    _, page = bench
    text = page.render()
    assert (BENCHMARKS / "RESULTS.md").read_text() == text, "run: python benchmarks/results_page.py"
    assert page.main(["--check"]) == 0


def test_tables_are_well_formed(bench):
    results, page = bench
    text = page.render()
    assert text.count("\n") <= 500
    assert not re.search(r"(?im)^#+ .*session \d+", text)
    for area in results.AREAS:
        doc = results.load(results.default_path(area))
        assert f"## {doc['title']}" in text
    tables = _tables(text)
    entries = sum(len(results.load(results.default_path(a))["entries"]) for a in results.AREAS)
    timing = [t for t in tables if t[0][0] == "operation"]
    measured = [a for a in results.AREAS if results.load(results.default_path(a))["entries"]]
    assert len(timing) == len(measured)  # an area not measured yet says so instead of a table
    assert sum(len(rows) for _, rows in timing) == entries
    for header, rows in tables:
        assert rows, header
        for row in rows:
            assert len(row) == len(header), (header, row)
            assert all(row), row                      # no empty cell: "–" where nothing is known
    for header, rows in timing:
        for row in rows:
            fields = dict(zip(header, row))
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", fields["date"]), fields
            assert re.fullmatch(r"`[0-9a-f]{7}\+?( / [0-9a-f]{7})?`", fields["commit"]), fields
            assert re.match(r"[\d.–]+ (µs|ms)", fields["time"]) or fields["time"] == "–", fields


def test_every_note_has_its_marker(bench):
    _, page = bench
    for area_doc in (json.loads(p.read_text()) for p in sorted((BENCHMARKS / "results").glob("*.json"))):
        lines, notes = page.table(area_doc["entries"])
        assert len(notes) == sum(1 for e in area_doc["entries"] if e.get("notes"))
        for i in range(1, len(notes) + 1):
            assert sum(f"[{i}] |" in line for line in lines) == 1


def _kernel_row(kernel, L, batch, L_out=None):
    row = dict(kernel=kernel, L=L, batch=batch, n=1 << 16, time_us=250.0, device_us=208.1,
               bytes=2 * batch * L * (1 << 16) * 4)
    if L_out:
        row.update(L_out=L_out, bytes=batch * (L + L_out) * (1 << 16) * 4)
    return row


def test_benchmarks_write_the_pages_keys(bench, tmp_path):
    """A rerun of the commands the page gives replaces its rows instead of adding new ones."""
    results, _ = bench
    import bench_ckks
    import bench_kernels
    import bench_pir
    from jax_fhe.pir import protocols as pr

    dev = "NVIDIA H100 80GB HBM3"
    rows = [_kernel_row("ntt30", 48, 16), _kernel_row("intt30", 48, 64), _kernel_row("bconv30", 12, 16, 48)]
    kern = bench_kernels.result_entries(rows, dev, (2.9e12, 3.035e12))
    assert kern[0]["floor"]["bandwidth_gbps"] == 3035 and kern[0]["clock"] == "device"
    assert kern[0]["ratio"] == pytest.approx(208.1 / (rows[0]["bytes"] / 3.035e12 * 1e6), abs=0.01)
    ks_rows = [dict(L=48, alpha=12, beta=4, us=283.8, us_per_ct_batched=205.6, batch=8, floor_us=196.0,
                    ratio=1.45, ratio_batched=1.05, table_iii_mb=(352, 233, 201))]
    op_rows = [dict(op="HMult (relin + rescale)", level=28, limbs=47, us=513.7, us_per_ct_batched=357.4, batch=8)]
    ks, ops = bench_ckks.result_entries(ks_rows, op_rows, "n16-boot", 1 << 16, dev, 3.0e12)
    pir = [bench_pir.pir_entry(pr.paper_params("hybrid", 16), 32, 0.1214, dev, 3.0e12)]
    assert pir[0]["floor"]["time"] == pytest.approx(11.1, abs=0.05)        # DB + planes, 31 GiB

    for area, written in (("kernels", kern), ("keyswitch", ks), ("ckks", ops), ("pir", pir)):
        page = results.load(results.default_path(area))
        keys = {(e["key"], e["device"]) for e in page["entries"]}
        for e in written:
            assert (e["key"], e["device"]) in keys, (area, e["key"])
        path = tmp_path / f"{area}.json"
        path.write_text(json.dumps(page))
        merged = results.merge(path, area, written)
        assert len(merged["entries"]) == len(page["entries"])            # replaced, not added
        for e in written:
            new = next(m for m in merged["entries"] if (m["key"], m["device"]) == (e["key"], e["device"]))
            old = next(m for m in page["entries"] if (m["key"], m["device"]) == (e["key"], e["device"]))
            assert new["time"] == e["time"]
            for carried in ("peer", "goal"):                             # papers' figures stay
                assert new.get(carried) == old.get(carried)


def test_merge_adds_and_creates(bench, tmp_path):
    results, page = bench
    e = results.entry("x/1", "op", "p", "cpu", time=1.5, commit="abcdef0", date="2026-01-01")
    doc = results.merge(tmp_path / "kernels.json", "kernels", [e])
    assert doc["entries"] == [e]
    e2 = dict(e, device="gpu")
    doc = results.merge(tmp_path / "kernels.json", "kernels", [e2])
    assert len(doc["entries"]) == 2
    with pytest.raises(ValueError, match="holds area"):
        results.merge(tmp_path / "kernels.json", "pir", [e])


@pytest.mark.parametrize("change, match", [
    (dict(time=None), "neither"),
    (dict(time="fast"), "number"),
    (dict(time=[2.0, 1.0]), "number"),
    (dict(unit="s"), "unit"),
    (dict(commit=""), "lacks"),
    (dict(clock="cpu"), "clock"),
    (dict(floor={"time": 1.0}), "floor"),
    (dict(peer={"figure": "1 ms"}), "peer"),
    (dict(batched={"time": 1.0}), "batched"),
])
def test_bad_entries_are_refused(bench, change, match):
    results, _ = bench
    e = dict(key="k", operation="op", parameters="p", device="cpu", date="2026-01-01", commit="abcdef0",
             unit="us", time=1.0)
    e.update(change)
    e = {k: v for k, v in e.items() if v is not None}
    with pytest.raises(ValueError, match=match):
        results.validate_entry(e)


def test_duplicate_entries_are_refused(bench, tmp_path):
    results, _ = bench
    e = dict(key="k", operation="op", parameters="p", device="cpu", date="2026-01-01", commit="abcdef0",
             unit="us", time=1.0)
    path = tmp_path / "pir.json"
    path.write_text(json.dumps({"area": "pir", "entries": [e, e]}))
    with pytest.raises(ValueError, match="two entries"):
        results.load(path)
