"""The one RLWE ciphertext of every scheme.

A ciphertext of degree k - 1 is ``data: uint32[..., k, L, N]``: k polynomials c_0, ..., c_{k-1}
over L RNS limbs, whose phase under the secret s is

    c_0 + c_1 s + ... + c_{k-1} s^(k-1)           (k = 2 normally, 3 after a tensor product).

Component 0 is the "b" part, component 1 the "a" part of a fresh encryption (b = m + e - a s).
Leading axes are batch axes. The domain is a static flag: ``is_ntt`` (evaluations, the default)
or coefficients (after ModRaise's inverse NTT, or for a scheme that needs them).

Schemes subclass :class:`Ciphertext` to add their static metadata (CKKS: level, scale, slots,
parameter set); every function of this layer takes and returns the plain arrays or the base
class, so it works for all of them.
"""
from __future__ import annotations

import dataclasses

import jax
import numpy as np

from ..rns.pytree import pytree_dataclass, static_field


@pytree_dataclass
class Ciphertext:
    """``data``: uint32[..., k, L, N]; static ``is_ntt`` (keyword-only: True for the NTT domain)."""

    data: jax.Array
    is_ntt: bool = static_field(default=True, kw_only=True)

    @property
    def size(self) -> int:
        """k, the number of polynomials (the degree is k - 1)."""
        return int(self.data.shape[-3])

    @property
    def degree(self) -> int:
        """k - 1: 1 for a fresh ciphertext, 2 after a product without relinearization."""
        return self.size - 1

    @property
    def batch_shape(self) -> tuple:
        """The leading (batch) axes of ``data``."""
        return tuple(self.data.shape[:-3])

    def replace(self, **changes) -> "Ciphertext":
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def __getitem__(self, index) -> "Ciphertext":
        """Index the batch axes only: ``ct[i]``, ``ct[1:3]``, ``ct[i, j]`` (never the
        component, limb or coefficient axes)."""
        idx = index if isinstance(index, tuple) else (index,)
        if any(i is Ellipsis or i is None for i in idx):
            raise IndexError("ciphertext indexing takes batch indices only (no ... or None)")
        if len(idx) > len(self.batch_shape):
            raise IndexError(f"too many indices: the ciphertext has batch shape {self.batch_shape} "
                             "(its last three axes, components x limbs x N, cannot be indexed)")
        return self.replace(data=self.data[idx])

    def __len__(self) -> int:
        if not self.batch_shape:
            raise TypeError("len() of an unbatched ciphertext")
        return self.batch_shape[0]

    def __iter__(self):
        # A pytree dataclass must not be iterable by accident (len + getitem would make it so);
        # iterate over the batch explicitly: [ct[i] for i in range(len(ct))].
        raise TypeError("ciphertexts are not iterable; index the batch axis: ct[i]")


def check_poly_stack(x, what: str, *, size: int | None = None) -> None:
    """Raise TypeError/ValueError unless x is uint32[..., k, L, N] (with k == size if given)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or np.dtype(dtype) != np.uint32:
        raise TypeError(f"{what}: ciphertext data must be a uint32 array, got "
                        f"{dtype if dtype is not None else type(x).__name__}")
    if x.ndim < 3 or (size is not None and x.shape[-3] != size):
        want = f"[..., {size}, L, N]" if size is not None else "[..., k, L, N]"
        raise ValueError(f"{what}: ciphertext data must have shape {want}, got {tuple(x.shape)}")
