"""Kernel primitives: thin JAX wrappers around the XLA FFI targets, plus jnp element-wise ops.

Every kernel call of the package goes through here; inputs are validated before lowering."""
from .automorphism import automorphism_coeff, automorphism_ntt, conjugation_element, galois_element
from .bconv import (StackedCenteredConv, bconv, bconv_centered, bconv_centered_stacked, exact_conv,
                    mixed_radix_conv, rounded_quotient, stack_centered)
from .key_product import digit_key_product
from .limbs import take_limbs, take_static
from .modgemm import mod_matmul_planes
from .modarith import add_mod, mac_mod, mul_limb_consts, mul_mod, mul_shoup, neg_mod, reduce_mod, sub_mod
from .ntt import intt, ntt, ntt_lift

__all__ = [
    "StackedCenteredConv", "add_mod", "automorphism_coeff", "automorphism_ntt", "bconv", "bconv_centered",
    "bconv_centered_stacked", "conjugation_element", "digit_key_product", "exact_conv", "galois_element",
    "intt", "mac_mod", "mixed_radix_conv", "mod_matmul_planes", "mul_limb_consts", "mul_mod", "mul_shoup",
    "neg_mod", "ntt", "ntt_lift", "reduce_mod", "rounded_quotient", "stack_centered", "sub_mod", "take_limbs",
    "take_static",
]
