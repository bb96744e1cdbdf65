"""The lattice layer shared by every scheme: RLWE/RGSW ciphertexts, gadget decomposition, key
switching (gadget, hybrid), external products.

Built only from :mod:`jax_fhe.rns` (tables, sampling) and :mod:`jax_fhe.ops` (kernels).

* :mod:`jax_fhe.rlwe.hybrid`: hybrid (Han–Ki, dnum digits + special primes) key switching as
  three stages ``mod_up`` -> ``key_inner_product`` -> ``mod_down`` (the reference), which
  ``key_switch`` runs with the extended digits never assembled (``mod_up_convs``, then the fused
  key inner product ``ops.digit_key_product`` with ModDown's last step in its store); the centered
  base conversion ``exact_conv`` used by ModDown and rational rescaling.
* :mod:`jax_fhe.rlwe.gadget`: the integer gadget (1, B, ..., B^(len-1)) over a whole RNS modulus
  (exact CRT in 32-bit words), RLWE encryption rows, gadget key switching (``gadget.key_switch``),
  automorphisms.
* :mod:`jax_fhe.rlwe.rgsw`: RGSW ciphertexts, the external product, CMUX, RLWE -> RGSW conversion.
"""
from . import gadget, hybrid, rgsw
from .gadget import (Gadget, GadgetKey, automorphism, automorphism_key, decompose, decompose_ntt,
                     decompose_signed, encrypt_ntt, gadget_product, gadget_rows, make_gadget,
                     phase_ntt, recompose, secret_ntt, switching_key)
from .hybrid import (ExactConv, HybridTables, KeySwitchKey, exact_conv, gen_switching_key,
                     key_inner_product, key_switch, key_switch_convs, make_exact_conv,
                     make_hybrid_tables, mod_down, mod_up, mod_up_convs)
from .rgsw import RGSWCiphertext, cmux, external_product, from_rlwe

__all__ = [
    "ExactConv", "HybridTables", "KeySwitchKey", "exact_conv", "gen_switching_key", "hybrid",
    "key_inner_product", "key_switch", "key_switch_convs", "make_exact_conv", "make_hybrid_tables",
    "mod_down", "mod_up", "mod_up_convs",
    # gadget key switching and RGSW (PIR); the gadget key switch is rlwe.gadget.key_switch
    "Gadget", "GadgetKey", "RGSWCiphertext", "automorphism", "automorphism_key", "cmux", "decompose",
    "decompose_ntt", "decompose_signed",
    "encrypt_ntt", "external_product", "from_rlwe", "gadget", "gadget_product", "gadget_rows",
    "make_gadget", "phase_ntt", "recompose", "rgsw", "secret_ntt", "switching_key",
]
