"""Circuits built from CKKS operations only: polynomial evaluation, linear transforms, the
homomorphic special DFT (CoeffToSlot / SlotToCoeff) and EvalMod, the pieces CKKS
bootstrapping is assembled from."""
from . import lintrans, polynomial
from .lintrans import LinearTransform, linear_transform, make_linear_transform
from .polynomial import Polynomial, chebyshev_interpolate, evaluate

__all__ = ["LinearTransform", "Polynomial", "chebyshev_interpolate", "evaluate", "linear_transform",
           "lintrans", "make_linear_transform", "polynomial"]
