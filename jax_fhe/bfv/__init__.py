"""BFV (exact arithmetic mod t on N SIMD slots) over 32-bit RNS words.

Parameters are data (:class:`BFVParams`, presets by name), tables live in a
:class:`BFVContext` pytree, keys come from :class:`jax_fhe.rns.HostRandom`. Plaintexts hold
coefficients mod t (:func:`encode`/:func:`decode` map the 2 x N/2 slot matrix to them);
ciphertexts are pytrees ``uint32[..., 2, L, N]`` (NTT domain, the full modulus Q). Every
evaluator function is pure and works under ``jax.jit`` and ``jax.vmap``. Multiplication is an
RNS scale-and-round (HPS-style, exact base conversions, no big integers); key switching goes
through :mod:`jax_fhe.rlwe.keyswitch` (the method the parameter set names). BGV
(:mod:`jax_fhe.bgv`) shares the plaintexts, the encoder and the keys.
"""
from .context import BFVContext, CodecTables, MulTables, make_context
from .encoder import PlainTables, decode, encode, make_plain_tables, slot_positions
from .encryption import decrypt, encrypt
from .evaluator import add, mul, mul_operand, neg, relinearize, rotate_columns, rotate_rows, square, sub
from .keys import (EvalKeys, KeySet, PublicKey, SecretKey, gen_galois_key, gen_public_key, gen_relin_key,
                   gen_rotation_keys, gen_secret_key, keygen)
from .noise import NoiseModel, max_depth, noise_budget, plain_norm2
from .params import BFVParams, check_batching_modulus
from .presets import PRESETS, bfv_cat_n15, bfv_n14, preset, toy_n10, toy_n12
from .types import Ciphertext, MulOperand, Plaintext

__all__ = [
    "BFVContext", "BFVParams", "Ciphertext", "CodecTables", "EvalKeys", "KeySet", "MulOperand", "MulTables", "NoiseModel",
    "PRESETS", "PlainTables", "Plaintext", "PublicKey", "SecretKey", "add", "bfv_cat_n15", "bfv_n14",
    "check_batching_modulus", "decode", "decrypt", "encode", "encrypt", "gen_galois_key", "gen_public_key",
    "gen_relin_key", "gen_rotation_keys", "gen_secret_key", "keygen", "make_context", "make_plain_tables",
    "max_depth", "mul", "mul_operand", "neg", "noise_budget", "plain_norm2", "preset", "relinearize", "rotate_columns",
    "rotate_rows", "slot_positions", "square", "sub", "toy_n10", "toy_n12",
]
