"""The examples run and check themselves, and each answers --help."""
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
ALL = sorted(p.name for p in EXAMPLES.glob("*.py"))


@pytest.mark.parametrize("script", ["ntt_polymul.py", "pir_lookup.py"])
def test_example_runs(script):
    out = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True, text=True,
                         timeout=300, cwd=EXAMPLES.parent / "tests")
    assert out.returncode == 0, out.stderr
    assert "OK" in out.stdout and "MISMATCH" not in out.stdout


@pytest.mark.parametrize("script", ALL)
def test_example_help(script):
    """--help prints the usage and the example's description, and exits 0 before any work."""
    out = subprocess.run([sys.executable, str(EXAMPLES / script), "--help"], capture_output=True, text=True,
                         timeout=120, cwd=EXAMPLES.parent / "tests")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage:") and f"{script}" in out.stdout, out.stdout
    doc = (EXAMPLES / script).read_text().split('"""')[1].split("\n")[0]
    assert doc.strip()[:40] in out.stdout.replace("\n", " "), (doc, out.stdout)


def test_examples_found():
    assert {"ckks_logistic.py", "ntt_polymul.py", "pir_lookup.py"} <= set(ALL)
