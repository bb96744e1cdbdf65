"""The lattice layer shared by every scheme: RLWE/RGSW ciphertexts, gadget decomposition, key
switching (gadget, hybrid), external products.

Built only from :mod:`jax_fhe.rns` (tables, sampling) and :mod:`jax_fhe.ops` (kernels).

* :mod:`jax_fhe.rlwe.hybrid`: hybrid (Han–Ki, dnum digits + special primes) key switching as
  three replaceable stages ``mod_up`` -> ``key_inner_product`` -> ``mod_down``; the centered
  base conversion ``exact_conv`` used by ModDown and rational rescaling.
"""
from . import hybrid
from .hybrid import (ExactConv, HybridTables, KeySwitchKey, exact_conv, gen_switching_key,
                     key_inner_product, key_switch, make_exact_conv, make_hybrid_tables, mod_down,
                     mod_up)

__all__ = [
    "ExactConv", "HybridTables", "KeySwitchKey", "exact_conv", "gen_switching_key", "hybrid",
    "key_inner_product", "key_switch", "make_exact_conv", "make_hybrid_tables", "mod_down", "mod_up",
]
