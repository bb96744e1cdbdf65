"""benchmarks/profile_pir.py on the toy instance: per-stage timing (the chained stages must give
the full answer's ciphertexts exactly) and the compile-only memory mode."""
import json

import pytest

from conftest import benchmarks_importable


@pytest.fixture(scope="module")
def profile_pir():
    with benchmarks_importable():
        import profile_pir
        yield profile_pir


def test_quick_stage_times(profile_pir, tmp_path):
    out = tmp_path / "prof.json"
    rows = profile_pir.main(["--quick", "--batches", "2", "--reps", "1", "--out", str(out)])
    stages = [r["stage"] for r in rows]
    assert stages == ["first_fold", "expand_query", "pack_first", "hybrid_fold", "mod_switch", "answer",
                      "sum_of_stages"]
    assert all(r["ms"] > 0 and r["batch"] == 2 and r["mode"] == "time" for r in rows)
    assert json.loads(out.read_text()) == rows


def test_quick_extra_pack_bound(profile_pir):
    """--also-pack-temp-gib re-times packing and the answer with another bound (a tiny one: the
    batch of 2 then runs as groups of one query) and checks the answer is unchanged."""
    rows = profile_pir.main(["--quick", "--batches", "2", "--reps", "1", "--also-pack-temp-gib", "1e-9"])
    stages = [r["stage"] for r in rows]
    assert stages[-2].startswith("pack_first@") and stages[-1].startswith("answer@")
    assert all(r["ms"] > 0 for r in rows)


def test_quick_memory(profile_pir):
    """Compile-only mode with a tiny packing bound (the grouped GEMM path) and the setup
    executables: the hint insert must update the planes in place (aliased)."""
    default = profile_pir.ep.PACK_TEMP_BYTES
    rows = profile_pir.main(["--quick", "--memory", "--batches", "2", "--pack-temp-gib", "1e-9"])
    by = {r["stage"]: r for r in rows}
    assert set(by) == {"random_db", "hint_step", "hint_insert", "first_fold", "expand_query", "pack_first",
                       "hybrid_fold", "mod_switch", "answer"}
    assert all(r["temp_bytes"] is not None and r["argument_bytes"] > 0 for r in rows if r["stage"] != "random_db")
    assert by["hint_insert"]["alias_bytes"] == by["hint_insert"]["output_bytes"] > 0
    assert all(r["pack_temp_bytes"] < 2 for r in rows)
    assert profile_pir.ep.PACK_TEMP_BYTES == default          # restored after the run
