"""Loads the compiled kernels (jax_fhe._kernels) and registers them as XLA FFI targets.

Targets are registered for the "cpu" platform always and for "CUDA" when the extension was
built with the CUDA kernels. Registration happens once, at import of jax_fhe.
"""
from __future__ import annotations

import jax

try:
    from . import _kernels
except ImportError as err:  # pragma: no cover - only when the package was not built
    raise ImportError(
        "jax_fhe's compiled kernels (jax_fhe._kernels) are missing: install the package with "
        "`pip install .` (it builds the C++/CUDA extension) rather than using the source tree"
    ) from err

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
