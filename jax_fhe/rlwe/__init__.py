"""The lattice layer shared by every scheme: the RLWE ciphertext, secrets, encryption and
decryption, automorphisms, the modulus chain, the key-switching interface and its methods
(hybrid, gadget), RGSW and external products.

Built only from :mod:`jax_fhe.rns` (tables, sampling) and :mod:`jax_fhe.ops` (kernels).

* :mod:`.ciphertext`: :class:`Ciphertext`, ``uint32[..., k, L, N]`` with phase
  c0 + c1 s + ... (c0 = b, c1 = a), a static NTT/coefficient flag; schemes subclass it.
* :mod:`.params`: :class:`RLWEParams`, the ring and its modulus chain (levels, special primes,
  digits, security bound); schemes subclass it.
* :mod:`.encryption`: secrets, secret/public-key encryption, the phase (decryption).
* :mod:`.keyswitch`: the key-switching interface (decompose, product without ModDown, ModDown,
  the fused switch) and the method registry; :mod:`.hybrid`, :mod:`.klss` and :mod:`.gadget`
  register there; :mod:`.selector` picks hybrid or KLSS per level from recorded measurements.
* :mod:`.plainmod`: a plaintext modulus t (BFV, BGV): centered lifts of residues mod t, and
  the t-correction that makes a division by primes (ModDown, modulus switching) keep the
  phase mod t.
* :mod:`.galois`: automorphisms of ciphertexts with "key switch first" Galois keys, and
  hoisted automorphisms.
* :mod:`.rgsw`: RGSW ciphertexts, the external product, CMUX, RLWE -> RGSW conversion.
"""
from . import ciphertext, encryption, gadget, galois, hybrid, keyswitch, klss, params, plainmod, rgsw, selector
from .galois import apply_galois, apply_galois_hoisted, gen_galois_key
from .ciphertext import Ciphertext
from .encryption import (NOISE_TAIL, encrypt_pk, encrypt_sk, gen_public_key, noise_ntt, phase, sample_secret,
                         secret_ntt, uniform)
from .gadget import (Gadget, GadgetKey, automorphism, automorphism_key, decompose, decompose_ntt, decompose_signed,
                     encrypt_ntt, gadget_product, gadget_rows, make_gadget, phase_ntt, recompose,
                     switching_key)
from .hybrid import (HybridTables, KeySwitchKey, gen_switching_key, key_inner_product, key_product_extended,
                     key_switch_convs, make_hybrid_tables, mod_down, mod_up, mod_up_convs, restrict_key,
                     stack_digits)
from .keyswitch import MultiKey, key_switch
from .klss import KLSSKey, KLSSLayout, KLSSTables, key_from_hybrid, klss_layout, make_klss_tables
from .params import RLWEParams, digit_rows
from .rgsw import RGSWCiphertext, cmux, external_product, from_rlwe

__all__ = [
    "NOISE_TAIL", "Ciphertext", "RLWEParams", "apply_galois", "apply_galois_hoisted", "automorphism", "galois",
    "ciphertext", "digit_rows", "encrypt_pk", "encrypt_sk", "encryption", "gen_galois_key",
    "gen_public_key", "keyswitch", "noise_ntt", "params", "phase", "plainmod", "sample_secret", "secret_ntt", "uniform",
    # the key-switching interface and its hybrid method
    "key_switch", "HybridTables", "KeySwitchKey", "gen_switching_key", "hybrid", "key_inner_product", "restrict_key",
    "key_product_extended", "key_switch_convs", "make_hybrid_tables", "mod_down", "mod_up", "mod_up_convs",
    "stack_digits",
    # KLSS key switching and the per-level choice
    "KLSSKey", "KLSSLayout", "KLSSTables", "MultiKey", "key_from_hybrid", "klss", "klss_layout",
    "make_klss_tables", "selector",
    # gadget key switching and RGSW (PIR); the gadget's own full-ciphertext switch is gadget.key_switch
    "Gadget", "GadgetKey", "RGSWCiphertext", "automorphism_key", "cmux", "decompose",
    "decompose_ntt", "decompose_signed", "encrypt_ntt", "external_product", "from_rlwe", "gadget",
    "gadget_product", "gadget_rows", "make_gadget", "phase_ntt", "recompose", "rgsw", "switching_key",
]
