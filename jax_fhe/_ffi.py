"""Loads the compiled kernels (jax_fhe._kernels) and registers them as XLA FFI targets.

Targets are registered for the "cpu" platform always and for "CUDA" when the extension was
built with the CUDA kernels. Registration happens once, at import of jax_fhe.
"""
from __future__ import annotations

import importlib.machinery
import os

import jax


def _missing_kernels_message(err: ImportError) -> str:
    """Why jax_fhe._kernels did not import, and the fix: most often the source tree shadows the
    installed package (it is first on sys.path and has no compiled module)."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    if not (os.path.isfile(os.path.join(root, "pyproject.toml"))
            and os.path.isdir(os.path.join(root, "ffi"))):
        return (f"jax_fhe's compiled kernels (jax_fhe._kernels) failed to load from {here}: {err}. "
                "Reinstall jax_fhe (`pip install .` in its source tree, README.md).")
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    if any(os.path.isfile(os.path.join(here, "_kernels" + sfx)) for sfx in suffixes):
        return (f"jax_fhe was imported from its source tree {root}, whose compiled kernels failed "
                f"to load: {err}. Rebuild them in place (`pip install -e .` there) or run from "
                "outside the source tree to use the installed jax_fhe.")
    others = sorted(f for f in os.listdir(here) if f.startswith("_kernels.") and f.endswith(".so"))
    built = f" for this Python (only {', '.join(others)})" if others else ""
    return (f"jax_fhe was imported from its source tree {root}, which has no compiled kernels "
            f"(jax_fhe._kernels){built}: the source tree shadows the installed package because "
            "it comes first on sys.path (the current directory or PYTHONPATH). Run from outside "
            "the source tree (e.g. `cd tests`) after `pip install .`, or build the kernels in "
            "place with `pip install -e .`.")


try:
    from . import _kernels
except ImportError as err:
    raise ImportError(_missing_kernels_message(err)) from err

CPU_TARGETS = tuple(_kernels.cpu_targets())
CUDA_TARGETS = tuple(_kernels.cuda_targets())


def _register() -> None:
    for name, capsule in _kernels.cpu_targets().items():
        jax.ffi.register_ffi_target(name, capsule, platform="cpu")
    for name, capsule in _kernels.cuda_targets().items():
        jax.ffi.register_ffi_target(name, capsule, platform="CUDA")


_register()


def built_with_cuda() -> bool:
    """Whether this installation contains the CUDA kernels."""
    return bool(_kernels.built_with_cuda)


def gpu_available() -> bool:
    """Whether a CUDA device is visible to JAX and the CUDA kernels were built."""
    if not built_with_cuda():
        return False
    try:
        return len(jax.devices("gpu")) > 0
    except RuntimeError:
        return False
