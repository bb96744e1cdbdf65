"""Kernel primitives: thin JAX wrappers around the XLA FFI targets, plus jnp element-wise ops."""
from .automorphism import automorphism_coeff, automorphism_ntt, conjugation_element, galois_element
from .bconv import StackedCenteredConv, bconv, bconv_centered, bconv_centered_stacked, stack_centered
from .key_product import digit_key_product
from .modarith import add_mod, mac_mod, mul_limb_consts, mul_mod, neg_mod, reduce_mod, sub_mod
from .ntt import intt, ntt, ntt_lift

__all__ = [
    "StackedCenteredConv", "add_mod", "automorphism_coeff", "automorphism_ntt", "bconv", "bconv_centered",
    "bconv_centered_stacked", "conjugation_element", "digit_key_product", "galois_element", "intt", "mac_mod", "mul_limb_consts", "mul_mod", "neg_mod", "ntt", "ntt_lift", "reduce_mod", "stack_centered",
    "sub_mod",
]
