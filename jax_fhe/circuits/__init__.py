"""Circuits built from CKKS operations only: polynomial evaluation, linear transforms, the
homomorphic special DFT (CoeffToSlot / SlotToCoeff) and EvalMod, the pieces CKKS
bootstrapping is assembled from."""
from . import polynomial
from .polynomial import Polynomial, chebyshev_interpolate, evaluate

__all__ = ["Polynomial", "chebyshev_interpolate", "evaluate", "polynomial"]
