"""The package's layers stay true: each module imports only from its own layer or lower ones
(docs/API.md, "Layers"), never a private name of another module, and never JAX internals.

The rule is read off the source with ``ast``, so it holds for every import, also lazy ones
inside functions.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

import jax_fhe

PACKAGE = pathlib.Path(jax_fhe.__file__).parent

#: Lowest first. A module may import from its own layer and every layer before it.
LAYERS = [("rns",), ("ops",), ("rlwe",), ("ckks", "bfv", "bgv", "lwe"), ("circuits",),
          ("pir", "nn", "apps", "io")]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("jax_fhe",) + path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield path, ".".join(parts), path.name == "__init__.py"


def _imports(path: pathlib.Path, module: str, is_package: bool):
    """(imported module, imported names) for every import statement of a file."""
    package = module if is_package else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, tuple(a.name for a in node.names)


def _layer(module: str):
    parts = module.split(".")
    return RANK.get(parts[1]) if len(parts) > 1 and parts[0] == "jax_fhe" else None


def _violations():
    upward, private, internal = [], [], []
    for path, module, is_package in _modules():
        here = _layer(module)
        own_package = module if is_package else module.rsplit(".", 1)[0]
        for target, names in _imports(path, module, is_package):
            if target.startswith("jax._src"):
                internal.append(f"{module} imports {target}")
            candidates = [target] + [f"{target}.{n}" for n in names]
            for cand in candidates:
                there = _layer(cand)
                if here is not None and there is not None and there > here:
                    upward.append(f"{module} ({LAYERS[here]}) imports {cand} ({LAYERS[there]})")
            if target.startswith("jax_fhe"):
                parts = target.split(".")
                for i, part in enumerate(parts[1:], 1):
                    if part.startswith("_") and not part.startswith("__") and ".".join(parts[:i]) != own_package:
                        private.append(f"{module} imports the private module {target}")
                for n in names:
                    if n.startswith("_") and not n.startswith("__") and target not in (module, own_package):
                        private.append(f"{module} imports the private name {target}.{n}")
    return upward, private, internal


def test_every_module_belongs_to_a_layer():
    stray = [m for _, m, _ in _modules()
             if m.count(".") >= 1 and _layer(m) is None and m.split(".")[1] not in ("_ffi", "_kernels")]
    assert not stray, f"modules outside every layer (add them to LAYERS): {stray}"


def test_no_upward_imports():
    upward, _, _ = _violations()
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_no_private_names_across_modules():
    _, private, _ = _violations()
    assert not private, "private names used across modules:\n" + "\n".join(private)


def test_no_jax_internals():
    _, _, internal = _violations()
    assert not internal, "imports of JAX internals:\n" + "\n".join(internal)


@pytest.mark.parametrize("source, expect", [
    ("from ..ckks import mul\n", "upward"),
    ("from ..rns._secret import x\n", "private"),
    ("from jax._src import config\n", "internal"),
])
def test_the_checker_catches_violations(tmp_path, monkeypatch, source, expect):
    """The checker itself can fail: a planted bad import in an ops module is reported."""
    pkg = tmp_path / "jax_fhe"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ops" / "__init__.py").write_text("")
    (pkg / "ops" / "bad.py").write_text(source)
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    upward, private, internal = _violations()
    found = {"upward": upward, "private": private, "internal": internal}[expect]
    assert found, f"the planted {expect} import was not reported"
