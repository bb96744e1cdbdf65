"""Shared fixtures: every kernel test runs on each backend; the GPU variant skips with a
reason on machines without a CUDA device (or without the CUDA kernels built)."""
from __future__ import annotations

import contextlib
import os
import pathlib
import sys
import zlib

# Under pytest-xdist each worker is a process with its own XLA client: without this, the first to
# touch the GPU preallocates 75% of its memory and the others run out. Set before jax is imported.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import jax_fhe  # noqa: E402


def _gpu_skip_reason() -> str | None:
    if not jax_fhe.built_with_cuda():
        return ("jax_fhe was built without its CUDA kernels (no GPU or no nvcc at build time; "
                "JAX_FHE_CUDA=ON builds them)")
    if not jax_fhe.gpu_available():
        return "no CUDA device visible to JAX"
    return None


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request):
    """The jax.Device a test runs on."""
    if request.param == "gpu":
        reason = _gpu_skip_reason()
        if reason:
            pytest.skip(reason)
        return jax.devices("gpu")[0]
    return jax.devices("cpu")[0]


@pytest.fixture
def put(device):
    """Move arrays and pytrees (contexts, tables) onto the test's device."""
    return lambda tree: jax.device_put(tree, device)


@pytest.fixture
def rng(request):
    """A numpy Generator seeded from the test's name: reproducible, different per test."""
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)


def random_residues(rng, primes, n, batch=()):
    """uint32[*batch, L, N] with limb l uniform in [0, primes[l]), plus the edge values 0, 1 and
    q - 1 planted at the first coefficients."""
    limbs = [rng.integers(0, q, size=batch + (n,), dtype=np.uint64) for q in primes]
    x = np.stack(limbs, axis=-2)
    for l, q in enumerate(primes):
        x[..., l, :3] = [0, 1, q - 1]
    return x.astype(np.uint32)


@pytest.fixture(scope="session")
def toy_boot_context():
    """The CKKS context of the insecure toy-boot-n12 preset, built once per session (~6 s):
    the circuits tests share it."""
    from jax_fhe import ckks
    return ckks.make_context(ckks.toy_boot_n12())


#: the benchmarks/ folder: its scripts are modules the benchmark tests import
BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


@contextlib.contextmanager
def benchmarks_importable():
    """benchmarks/ on sys.path for the duration (its scripts import one another by name)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield
    finally:
        sys.path.remove(str(BENCHMARKS))
