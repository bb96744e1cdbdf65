"""Kernel primitives: thin JAX wrappers around the XLA FFI targets, plus jnp element-wise ops.

Every kernel call of the package goes through here; inputs are validated before lowering.

Residues are canonical: limb i of a polynomial holds values in [0, q_i). Host inputs (numpy
arrays) are checked and rejected with a ValueError when they are not (one pass over host
memory); device arrays and traced values are not checked -- that would take a device reduction
and a synchronisation before each kernel -- so there canonical inputs are the caller's contract
(a violation gives wrong but memory-safe results). ``reduce_mod`` makes any uint32 words
canonical; ``ntt_lift`` takes small signed int32 values instead (its CPU kernel checks them)."""
from .automorphism import (automorphism_coeff, automorphism_ntt, automorphism_ntt_add, conjugation_element,
                           galois_element)
from .bconv import (StackedCenteredConv, bconv, bconv_centered, bconv_centered_stacked, exact_conv,
                    mixed_radix_conv, rounded_quotient, stack_centered)
from .diagonal import diagonal_sums
from .graph import graph_break
from .key_product import digit_key_product
from .limbs import take_limbs, take_static
from .modgemm import mod_matmul_planes
from .modarith import add_mod, mac_mod, mul_limb_consts, mul_mod, mul_shoup, neg_mod, reduce_mod, sub_mod
from .ntt import intt, ntt, ntt_lift
from .sample import sample_small, sample_uniform
from .tensor import tensor_product

__all__ = [
    "StackedCenteredConv", "add_mod", "automorphism_coeff", "automorphism_ntt", "automorphism_ntt_add",
    "bconv", "bconv_centered",
    "bconv_centered_stacked", "conjugation_element", "diagonal_sums", "digit_key_product", "exact_conv", "galois_element",
    "graph_break", "intt", "mac_mod", "mixed_radix_conv", "mod_matmul_planes", "mul_limb_consts", "mul_mod", "mul_shoup",
    "neg_mod", "ntt", "ntt_lift", "reduce_mod", "rounded_quotient", "sample_small", "sample_uniform", "stack_centered", "sub_mod", "take_limbs",
    "take_static", "tensor_product",
]
