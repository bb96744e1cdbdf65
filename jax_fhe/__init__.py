"""jax_fhe: lattice cryptography as JAX primitives (XLA FFI kernels on CPU and CUDA).

Layers (each imports only from those above it in this list):
  jax_fhe.ops  - kernel primitives: NTT/INTT, base conversion, automorphisms, modular ops
  jax_fhe.rns  - primes, RNS contexts and tables (built on the host with exact integers)
"""
from . import _ffi  # registers the FFI targets  # noqa: F401
from . import ops, rns
from ._ffi import built_with_cuda, gpu_available

__version__ = "0.1.0"

__all__ = ["built_with_cuda", "gpu_available", "ops", "rns", "__version__"]
