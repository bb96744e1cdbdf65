"""The installed package: typing marker shipped, and the error raised when a source tree without
compiled kernels shadows the installed package (docs/install.md)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import resources

import jax_fhe


def test_py_typed_ships():
    assert resources.files("jax_fhe").joinpath("py.typed").is_file()


def test_keyswitch_measurements_ship():
    """keyswitch="auto" reads its recorded measurements from package data (checked in a CPU
    wheel: jax_fhe/rlwe/keyswitch_measurements.json is in it)."""
    assert resources.files("jax_fhe.rlwe").joinpath("keyswitch_measurements.json").is_file()


def _source_tree_copy(tmp_path, kernels_file=None):
    """A copy of jax_fhe/ laid out like the repository root, without compiled modules."""
    pkg = os.path.dirname(jax_fhe.__file__)
    shutil.copytree(pkg, tmp_path / "jax_fhe",
                    ignore=shutil.ignore_patterns("_kernels*", "__pycache__"))
    (tmp_path / "ffi").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'jax_fhe'\n")
    if kernels_file is not None:
        (tmp_path / "jax_fhe" / kernels_file).write_bytes(b"not an ELF file")
    return tmp_path


def _import_in(cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", "import jax_fhe"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_source_tree_without_kernels_names_the_fix(tmp_path):
    root = _source_tree_copy(tmp_path)
    out = _import_in(root)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: jax_fhe was imported from its source tree")
    assert "shadows the installed package" in last
    assert "Run from outside the source tree" in last and "pip install -e ." in last


def test_source_tree_with_broken_kernels_says_why(tmp_path):
    import importlib.machinery
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    root = _source_tree_copy(tmp_path, kernels_file="_kernels" + suffix)
    out = _import_in(root)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert "whose compiled kernels failed to load" in last
    assert "_kernels" + suffix in last
