"""CKKS (approximate arithmetic on complex vectors) over 32-bit RNS words.

Parameters are data (:class:`CKKSParams`, presets by name), tables live in a
:class:`CKKSContext` pytree, keys come from :class:`jax_fhe.rns.HostRandom`. Ciphertexts are
pytrees ``uint32[..., 2, L, N]`` (NTT domain) with static level, scale and slot count; every
evaluator function is pure and works under ``jax.jit`` and ``jax.vmap``. Rescaling is rational
(a level is a set of primes; see docs/ckks-parameters.md); key switching goes through
:mod:`jax_fhe.rlwe.keyswitch` with the method the parameter set names (hybrid by default; "klss", or "auto" per level).
"""
from .context import CKKSContext, RescaleTables, make_context
from .encoder import compact_coefficients, decode, encode, encode_extended
from .encryption import decrypt, encrypt
from .evaluator import (add, level_down, mod_down_rescale, mul, mul_i, neg, relinearize, rescale, scales_match,
                        sub)
from .keys import (EvalKeys, KeySet, PublicKey, SecretKey, gen_galois_key, gen_public_key,
                   gen_relin_key, gen_rotation_keys, gen_secret_key, gen_switching_key, keygen,
                   restrict_key)
from .modraise import ModRaiseTables, make_mod_raise_tables, mod_raise, switch_key
from .params import HE_STD_128_TERNARY, CKKSParams
from .precision import Precision, precision
from .presets import (PRESETS, build_chain, cat_n15, ckks_n15, ckks_n16_boot, preset, toy_boot_n12,
                      toy_n11_single, toy_n12, toy_n12_klss)
from .rotation import conjugate, rotate, rotate_hoisted
from .types import Ciphertext, Plaintext

__all__ = [
    "CKKSContext", "CKKSParams", "Ciphertext", "EvalKeys", "HE_STD_128_TERNARY", "KeySet", "PRESETS",
    "Plaintext", "Precision", "PublicKey", "RescaleTables", "SecretKey", "add", "build_chain", "cat_n15",
    "ckks_n15", "ckks_n16_boot", "compact_coefficients", "conjugate", "decode", "decrypt", "encode",
    "encode_extended", "encrypt",
    "gen_galois_key", "gen_public_key", "gen_relin_key", "gen_rotation_keys", "gen_secret_key", "restrict_key",
    "gen_switching_key", "relinearize", "ModRaiseTables", "make_mod_raise_tables", "mod_raise", "switch_key",
    "keygen", "level_down", "make_context", "mod_down_rescale", "mul", "mul_i", "neg", "precision", "preset",
    "rescale", "rotate", "rotate_hoisted", "scales_match", "sub", "toy_boot_n12", "toy_n11_single",
    "toy_n12", "toy_n12_klss",
]
