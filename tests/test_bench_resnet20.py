"""benchmarks/bench_resnet20.py --combine: the accuracy over several runs' disjoint image ranges
(the 512-image accuracy is measured in parts that each fit one device call)."""
import json

import pytest

from conftest import benchmarks_importable


@pytest.fixture(scope="module")
def bench():
    with benchmarks_importable():
        import bench_resnet20
        yield bench_resnet20


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
