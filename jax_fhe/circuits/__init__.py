"""Circuits built from CKKS operations only: polynomial evaluation, linear transforms, the
homomorphic special DFT (CoeffToSlot / SlotToCoeff), EvalMod, and CKKS bootstrapping
assembled from them."""
from . import bootstrapping, dft, lintrans, mod1, polynomial
from .bootstrapping import (BootstrapConfig, BootstrapKeys, Bootstrapper, bootstrap, gen_bootstrap_keys,
                            make_bootstrapper)
from .dft import DFTPlan, coeffs_to_slots, conj_add, make_cts, make_stc, real_imag_split, slots_to_coeffs
from .lintrans import LinearTransform, linear_transform, make_linear_transform
from .mod1 import Mod1Params, eval_mod1
from .polynomial import Polynomial, chebyshev_interpolate, evaluate

__all__ = [
    "BootstrapConfig", "BootstrapKeys", "Bootstrapper", "bootstrap", "bootstrapping", "gen_bootstrap_keys",
    "make_bootstrapper", "DFTPlan", "LinearTransform", "Mod1Params", "Polynomial", "chebyshev_interpolate",
    "coeffs_to_slots", "conj_add", "dft", "eval_mod1", "evaluate", "lintrans", "linear_transform",
    "make_cts", "make_linear_transform", "make_stc", "mod1", "polynomial", "real_imag_split",
    "slots_to_coeffs",
]
