"""jax_fhe: lattice cryptography as JAX primitives (XLA FFI kernels on CPU and CUDA).

Layers (each imports only from the layers listed before it):
  jax_fhe.rns  - primes, RNS contexts and tables (built on the host with exact integers)
  jax_fhe.ops  - kernel primitives: NTT/INTT, base conversion, automorphisms, modular ops
  jax_fhe.rlwe - the lattice layer: ciphertexts, encryption, key switching, plaintext modulus
  jax_fhe.ckks - CKKS: parameter sets (rational rescaling), encoder, keys, evaluator, rotations
  jax_fhe.bfv  - BFV: exact arithmetic mod t on SIMD slots, RNS scale-and-round multiplication
  jax_fhe.bgv  - BGV: the same with modulus switching (t-corrected) and level management
  jax_fhe.lwe  - LWE (q = 2^32) for PIR: keys, encryption, modulus switching, noise
  jax_fhe.circuits - circuits over CKKS: polynomials, linear transforms, the homomorphic DFT, EvalMod
  jax_fhe.pir  - PIR: the int8 tensor-core DB GEMM, SimplePIR
  jax_fhe.io   - saving and loading objects (versioned, checksummed files and bytes)
  jax_fhe.apps - applications: HELR (logistic-regression training on encrypted data)
"""
from . import _ffi  # registers the FFI targets  # noqa: F401
from . import apps, bfv, bgv, circuits, ckks, io, lwe, ops, pir, rlwe, rns
from ._ffi import built_with_cuda, gpu_available

__version__ = "0.1.0"

__all__ = ["apps", "bfv", "bgv", "built_with_cuda", "circuits", "ckks", "gpu_available", "io", "lwe", "ops", "pir",
           "rlwe", "rns",
           "__version__"]
