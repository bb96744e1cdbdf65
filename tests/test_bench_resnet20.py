"""benchmarks/bench_resnet20.py --combine: the accuracy over several runs' disjoint image ranges
(the 512-image accuracy is measured in parts that each fit one device call)."""
import json
import pathlib
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        import bench_resnet20
        yield bench_resnet20
    finally:
        sys.path.remove(str(BENCH))


def _run(tmp_path, name, start, pred, poly, labels):
    path = tmp_path / name
    path.write_text(json.dumps(dict(start=start, predictions=pred, poly_predictions=poly, labels=labels)))
    return str(path)


def test_combine_counts_each_image_once(bench, tmp_path):
    a = _run(tmp_path, "a.json", 0, [1, 2, 3], [1, 2, 4], [1, 0, 3])
    b = _run(tmp_path, "b.json", 3, [5], [5], [5])
    got = bench.combine([a, b])
    assert got == dict(images=4, encrypted_accuracy=0.75, encrypted_agreement_poly=0.75, poly_accuracy=0.5)


def test_combine_refuses_overlapping_ranges(bench, tmp_path):
    a = _run(tmp_path, "a.json", 0, [1, 2, 3], [1, 2, 3], [1, 2, 3])
    b = _run(tmp_path, "b.json", 2, [5], [5], [5])
    with pytest.raises(SystemExit, match="overlap"):
        bench.combine([a, b])
