"""The examples run and check themselves."""
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("script", ["ntt_polymul.py", "pir_lookup.py"])
def test_example_runs(script):
    out = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True, text=True,
                         timeout=300, cwd=EXAMPLES.parent / "tests")
    assert out.returncode == 0, out.stderr
    assert "OK" in out.stdout and "MISMATCH" not in out.stdout
