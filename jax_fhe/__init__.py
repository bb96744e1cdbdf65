"""jax_fhe: lattice cryptography as JAX primitives (XLA FFI kernels on CPU and CUDA).

Layers (each imports only from the layers listed before it):
  jax_fhe.rns  - primes, RNS contexts and tables (built on the host with exact integers)
  jax_fhe.ops  - kernel primitives: NTT/INTT, base conversion, automorphisms, modular ops
  jax_fhe.rlwe - the lattice layer: hybrid key switching (ModUp, key inner product, ModDown)
  jax_fhe.ckks - CKKS: parameter sets (rational rescaling), encoder, keys, evaluator, rotations
  jax_fhe.lwe  - LWE (q = 2^32) for PIR: keys, encryption, modulus switching, noise
  jax_fhe.circuits - circuits over CKKS: polynomials, linear transforms, the homomorphic DFT, EvalMod
  jax_fhe.pir  - PIR: the int8 tensor-core DB GEMM, SimplePIR
  jax_fhe.apps - applications: HELR (logistic-regression training on encrypted data)
"""
from . import _ffi  # registers the FFI targets  # noqa: F401
from . import apps, circuits, ckks, lwe, ops, pir, rlwe, rns
from ._ffi import built_with_cuda, gpu_available

__version__ = "0.1.0"

__all__ = ["apps", "built_with_cuda", "circuits", "ckks", "gpu_available", "lwe", "ops", "pir", "rlwe", "rns",
           "__version__"]
