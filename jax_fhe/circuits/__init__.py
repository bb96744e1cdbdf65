"""Circuits built from CKKS operations only: polynomial evaluation, linear transforms, the
homomorphic special DFT (CoeffToSlot / SlotToCoeff) and EvalMod, the pieces CKKS
bootstrapping is assembled from."""
from . import dft, lintrans, mod1, polynomial
from .dft import DFTPlan, coeffs_to_slots, conj_add, make_cts, make_stc, real_imag_split, slots_to_coeffs
from .lintrans import LinearTransform, linear_transform, make_linear_transform
from .mod1 import Mod1Params, eval_mod1
from .polynomial import Polynomial, chebyshev_interpolate, evaluate

__all__ = [
    "DFTPlan", "LinearTransform", "Mod1Params", "Polynomial", "chebyshev_interpolate",
    "coeffs_to_slots", "conj_add", "dft", "eval_mod1", "evaluate", "lintrans", "linear_transform",
    "make_cts", "make_linear_transform", "make_stc", "mod1", "polynomial", "real_imag_split",
    "slots_to_coeffs",
]
