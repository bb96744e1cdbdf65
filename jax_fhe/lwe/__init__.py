"""LWE (Regev) over Z_{2^32}: the scalar-HE layer of VIPIR-style PIR.

    from jax_fhe import lwe
    sk = lwe.keygen(lwe.LWE_N1280)                  # ternary secret from os.urandom
    ct = lwe.encrypt(sk, [1, 2, 255])               # a: uint32[3, 1280], b: uint32[3]
    lwe.decrypt(sk, ct)                             # -> [1, 2, 255]
    small = lwe.mod_switch(ct, 18)                  # words in [0, 2^18)
    lwe.noise_magnitude(sk, small, [1, 2, 255])     # well below small.delta // 2 = 512
"""
from .params import LWE_N1280, LWE_TOY, PRESETS, LWEParams
from .sampling import HostRandom, public_matrix
from .scheme import (
    LWECiphertext, LWESecretKey, centered, decrypt, encrypt, inner_product, keygen, mod_switch,
    noise, noise_magnitude, phase,
)

__all__ = [
    "LWE_N1280", "LWE_TOY", "PRESETS", "HostRandom", "LWECiphertext", "LWEParams", "LWESecretKey",
    "centered", "decrypt", "encrypt", "inner_product", "keygen", "mod_switch", "noise",
    "noise_magnitude", "phase", "public_matrix",
]
