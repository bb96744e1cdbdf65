"""Applications written with the layers below: HELR (encrypted logistic-regression training)."""
from . import helr

__all__ = ["helr"]
