"""The BGV ciphertext pytree (plaintexts are :class:`jax_fhe.bfv.Plaintext`, shared).

A ciphertext at level l is the RLWE ciphertext ``uint32[..., k, L_l, N]`` (NTT domain, the rows
of level l) whose phase x = c0 + c1 s (+ c2 s^2) is, centered mod Q_l, E = f m + t e: the
message times the static ``factor`` f (mod t) plus t times the noise. Fresh encryptions have
f = 1; a modulus switch dropping D multiplies f by D^-1, a product multiplies the factors, and
additions bring their operands to one factor. Decryption returns f^-1 [x]_t. The factor is
static (a deterministic function of the circuit, like CKKS's scale), so a jitted circuit
compiles once per factor pattern.
"""
from __future__ import annotations

from ..rlwe.ciphertext import Ciphertext as RLWECiphertext
from ..rns.pytree import pytree_dataclass, static_field
from .params import BGVParams


@pytree_dataclass
class Ciphertext(RLWECiphertext):
    """A BGV ciphertext: data uint32[..., k, L_level, N] (NTT domain; k = 2, or 3 after
    ``mul(..., relinearize=False)``); static ``level``, ``factor`` (in [1, t)), ``params``.
    ``ct[i]`` indexes the batch axes."""

    level: int = static_field()
    factor: int = static_field()
    params: BGVParams = static_field()

    def __repr__(self) -> str:
        deg = "" if self.size == 2 else f", degree={self.degree}"
        return (f"bgv.Ciphertext(shape={tuple(self.data.shape)}, level={self.level}, factor={self.factor}{deg}, "
                f"params={self.params.name!r})")
