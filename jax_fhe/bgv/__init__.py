"""BGV (exact arithmetic mod t on N SIMD slots, levels by modulus switching) over 32-bit RNS
words.

The same plaintexts, batch encoder and keys as :mod:`jax_fhe.bfv` (keys with noise t e); a
ciphertext carries its level and a static ``factor`` (the message is multiplied by it: modulus
switching multiplies it by D^-1 mod t). Multiplication is the plain tensor product, followed by
relinearization with the t-corrected key switch; :func:`mod_switch` divides by the dropped
primes with the t-correction (:mod:`jax_fhe.rlwe.plainmod`). Every evaluator function is pure
and works under ``jax.jit`` and ``jax.vmap``.
"""
from ..bfv.encoder import decode, encode
from ..bfv.keys import (EvalKeys, KeySet, PublicKey, SecretKey, gen_galois_key, gen_public_key, gen_relin_key,
                        gen_rotation_keys, gen_secret_key, keygen)
from ..bfv.types import MulOperand, Plaintext
from .context import BGVContext, ModSwitchTables, make_context, make_mod_switch_tables
from .encryption import decrypt, encrypt
from .evaluator import (add, balance_factors, mod_switch, mod_switch_to, mul, mul_operand, neg, relinearize,
                        rotate_columns, rotate_rows, square, sub)
from .noise import NoiseModel, max_depth, noise_budget
from .params import BGVParams
from .presets import PRESETS, bgv_cat_n15, bgv_n14, preset, toy_n10, toy_n12
from .types import Ciphertext

__all__ = [
    "BGVContext", "BGVParams", "Ciphertext", "EvalKeys", "KeySet", "ModSwitchTables", "MulOperand", "NoiseModel", "PRESETS",
    "Plaintext", "PublicKey", "SecretKey", "add", "balance_factors", "bgv_cat_n15", "bgv_n14", "decode",
    "decrypt", "encode", "encrypt", "gen_galois_key", "gen_public_key", "gen_relin_key", "gen_rotation_keys",
    "gen_secret_key", "keygen", "make_context", "make_mod_switch_tables", "max_depth", "mod_switch",
    "mod_switch_to", "mul", "mul_operand", "neg", "noise_budget", "preset", "relinearize", "rotate_columns", "rotate_rows",
    "square", "sub", "toy_n10", "toy_n12",
]
