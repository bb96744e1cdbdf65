"""Applications written with the layers below: HELR (encrypted logistic-regression training) and
PDQ (private dataset queries over an encrypted table)."""
from . import helr, pdq

__all__ = ["helr", "pdq"]
