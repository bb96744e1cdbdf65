"""Where the rows of an encrypted table live in the CKKS slots (bit-plane blocks).

A column of unsigned integers (``bits`` = 32 by default, values in [0, 2^bits)) is stored as
its bit planes: a ciphertext of S = N/2 slots holds R = S / bits rows, slot ``k R + i`` holding
bit k (k = 0 the least significant) of row i. Every slot is used (32 x 1,024 = 32,768 slots at
N = 2^16), and one ciphertext carries all the bits of a column, so a comparison works on the
whole column with slot-wise products and 5 rotations by multiples of R (no per-bit ciphertexts).
A table of more than R rows is cut into ``chunks`` ciphertexts per column (a leading batch axis;
the query programs ``vmap`` over it). Rows past the table's end are zero and never counted
(``valid``).
"""
from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["BITS", "Layout", "bit_planes", "from_bit_planes", "make_layout"]

#: Default bit width of a column (values up to 2^32 - 1).
BITS = 32


@dataclasses.dataclass(frozen=True)
class Layout:
    """Static shape of an encrypted table (hashable: part of a compiled query's key).

    rows:   number of table rows.
    slots:  S = N/2 slots per ciphertext.
    bits:   bit width of every column (a power of two dividing S).
    """

    rows: int
    slots: int
    bits: int = BITS

    def __post_init__(self):
        for name in ("rows", "slots", "bits"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Layout: {name} must be a positive int, got {v!r}")
        if self.bits & (self.bits - 1) or self.slots & (self.slots - 1):
            raise ValueError(f"Layout: bits ({self.bits}) and slots ({self.slots}) must be powers of two")
        if self.bits > self.slots // 2:
            raise ValueError(f"Layout: {self.bits} bit planes need more than {self.slots} slots")

    @property
    def rows_per_ct(self) -> int:
        """R = slots / bits: table rows held by one ciphertext."""
        return self.slots // self.bits

    @property
    def chunks(self) -> int:
        """Ciphertexts per column: ceil(rows / R)."""
        return -(-self.rows // self.rows_per_ct)

    @property
    def log_bits(self) -> int:
        """log2(bits): the depth of the comparison tree."""
        return self.bits.bit_length() - 1

    def block_steps(self) -> tuple:
        """Rotation steps between bit blocks: R, 2R, ..., (bits / 2) R."""
        r = self.rows_per_ct
        return tuple(r << s for s in range(self.log_bits))

    def row_steps(self) -> tuple:
        """Rotation steps summing the R rows of a block: 1, 2, ..., R / 2."""
        return tuple(1 << j for j in range(self.rows_per_ct.bit_length() - 1))

    def rotation_steps(self) -> tuple:
        """Every rotation a query on this layout uses (generate keys for these)."""
        return tuple(sorted(set(self.block_steps()) | set(self.row_steps())))

    def valid(self) -> np.ndarray:
        """bool[chunks, R]: which row positions hold table rows."""
        return (np.arange(self.chunks * self.rows_per_ct) < self.rows).reshape(self.chunks, -1)


def make_layout(rows: int, params, bits: int = BITS) -> Layout:
    """The layout of a ``rows``-row table for a CKKS parameter set (``params.slots`` slots)."""
    return Layout(rows=int(rows), slots=int(params.slots), bits=int(bits))


def check_column(values, layout: Layout, name: str = "column") -> np.ndarray:
    """Integer values int64[rows] in [0, 2^bits), or a clear error."""
    v = np.asarray(values)
    if v.shape != (layout.rows,):
        raise ValueError(f"{name}: expected {layout.rows} values, got shape {v.shape}")
    if v.dtype == bool or not np.issubdtype(v.dtype, np.integer):
        if not np.issubdtype(v.dtype, np.floating) or not np.all(np.equal(np.floor(v), v)):
            raise TypeError(f"{name}: values must be integers (scale fixed-point reals to integers first)")
    if v.size and (v.min() < 0 or v.max() >= 2 ** layout.bits):
        raise ValueError(f"{name}: values must lie in [0, 2^{layout.bits}), got [{v.min()}, {v.max()}]")
    return v.astype(np.uint64).astype(np.int64) if v.dtype.kind == "u" else v.astype(np.int64)


def bit_planes(values, layout: Layout) -> np.ndarray:
    """float64[chunks, slots]: slot k R + i of chunk c holds bit k of row c R + i (0 past the end)."""
    v = check_column(values, layout)
    r = layout.rows_per_ct
    padded = np.zeros(layout.chunks * r, dtype=np.int64)
    padded[:layout.rows] = v
    padded = padded.reshape(layout.chunks, r)
    planes = (padded[:, None, :] >> np.arange(layout.bits)[None, :, None]) & 1
    return planes.reshape(layout.chunks, layout.slots).astype(np.float64)


def from_bit_planes(planes, layout: Layout) -> np.ndarray:
    """Inverse of :func:`bit_planes` on rounded planes: int64[rows] (Python-int exact)."""
    p = np.rint(np.asarray(planes, dtype=np.float64)).astype(np.int64)
    p = p.reshape(layout.chunks, layout.bits, layout.rows_per_ct)
    v = (p << np.arange(layout.bits)[None, :, None]).sum(axis=1)
    return v.reshape(-1)[:layout.rows]


def block_vector(per_block, layout: Layout) -> np.ndarray:
    """float64[slots]: value ``per_block[k]`` over block k's R slots."""
    return np.repeat(np.asarray(per_block, dtype=np.float64), layout.rows_per_ct)
