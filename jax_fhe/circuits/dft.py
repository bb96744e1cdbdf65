"""The homomorphic special DFT: CoeffToSlot (CtS) and SlotToCoeff (StC), factored into phases.

**The map.** A ciphertext packing n slots (n a power of two <= N/2) holds a polynomial
t(Y) = sum_{i < 2n} t_i Y^i in Y = X^(N/2n), with slot j = t(zeta^(5^j)) (the encoder's
embedding, zeta = exp(i pi / N); full slots: n = N/2, Y = X). With xi = exp(2 pi i / 4n),
Y^n -> i at every slot, so

    z = V w,   V[j, i] = xi^(i 5^j mod 4n),   w_i = t_i + i t_{n+i}   (i, j < n).

**Butterflies.** Splitting w into even and odd indices gives the special FFT:
V_n = B_n (I_2 (x) V_{n/2}) (even/odd split), B_m = [[I, D_m], [I, -D_m]] with
D_m = diag(xi^((5^p mod 4m) n/m)), p < m/2. Unrolled, V = S_n S_{n/2} ... S_2 R, where
S_m = I_{n/m} (x) B_m is a stage with stride m/2 (diagonals 0 and +-m/2 in slot rotations) and
R is the bit-reversal permutation, (R w)[k] = w[br(k)].

**Layouts.** The permutation R is never evaluated: CtS outputs coefficients in bit-reversed
order and StC takes them so (EvalMod in between is slot-wise):

* ``coeffs_to_slots`` (not packed): slot k = factor * (t_{br(k)} + i t_{n+br(k)}), n slots;
  the matrix is factor * R V^-1 = factor * S_2^-1 ... S_n^-1 (strides high to low).
  :func:`real_imag_split` then yields 2 factor t_{br(k)} and 2 factor t_{n+br(k)}.
* ``coeffs_to_slots`` (packed, n <= N/4): 2n slots, u = factor * [x, -i x] with x the
  unpacked output (the last phase is extended to 2n slots at no extra rotation);
  :func:`conj_add` then yields the 2n real values 2 factor [t_{br(k)}, t_{n+br(k)}]: one
  EvalMod for both halves (Cheddar's sparse path).
* ``slots_to_coeffs`` (not packed): input slot k = w_{br(k)}, output factor * V w, n slots;
  the matrix is factor * V R = factor * S_n ... S_2 (strides low to high).
* ``slots_to_coeffs`` (packed): input 2n slots [a, b] (real), output factor * V (a + i b)
  with a, b in bit-reversed order, n slots. The first phase is multiplied on the right by the
  mask [1, i] and followed by v + rot_n(v) (one extra rotation, key n).

**Phases.** The log2(n) stages are merged into ``levels`` phases of consecutive stages (a
phase of r stages has up to 2^(r+1) - 1 diagonals); CtS puts the larger phases first, StC
last (Lattigo's order), or pass ``radix_logs``. ``factor`` is spread as its k-th root over the
k phases. Each phase is one :class:`jax_fhe.circuits.lintrans.LinearTransform` at its level
(scale rho_level): a DFT of k phases consumes k levels and keeps the scale label.

Host functions (``special_fft_matrix``, ``cts_matrices``, ...) are plain numpy and are what the
tests check against the encoder.
"""
from __future__ import annotations

import dataclasses
import numbers

import jax
import numpy as np

from .. import ckks
from ..ckks import CKKSContext, Ciphertext, EvalKeys
from . import lintrans

__all__ = ["DFTPlan", "bit_reverse", "coeffs_to_slots", "conj_add", "cts_matrices", "fft_stages",
           "make_cts", "make_stc", "real_imag_split", "rotation_steps", "slots_to_coeffs",
           "special_fft_matrix", "stc_matrices", "split_stages"]


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1 or n & (n - 1):
        raise ValueError(f"slot count must be a power of two >= 1, got {n!r}")
    return int(n)


def bit_reverse(n: int) -> np.ndarray:
    """br: int64[n], the bit reversal of log2(n) bits."""
    n = _check_n(n)
    bits = n.bit_length() - 1
    k = np.arange(n)
    out = np.zeros(n, dtype=np.int64)
    for b in range(bits):
        out |= ((k >> b) & 1) << (bits - 1 - b)
    return out


def _pow5(n: int, mod: int) -> np.ndarray:
    e = np.ones(n, dtype=np.int64)
    for j in range(1, n):
        e[j] = e[j - 1] * 5 % mod
    return e


def special_fft_matrix(n: int) -> np.ndarray:
    """V: complex128[n, n], V[j, i] = xi^(i 5^j mod 4n), xi = exp(2 pi i / 4n): slots = V w
    with w_i = t_i + i t_{n+i} (see the module docstring)."""
    n = _check_n(n)
    e = _pow5(n, 4 * n)
    expo = np.outer(e, np.arange(n)) % (4 * n)
    return np.exp(2j * np.pi * expo / (4 * n))


def _stage(n: int, m: int, inverse: bool) -> dict:
    """S_m (or S_m^-1) = I_{n/m} (x) B_m in diagonal form on n slots (stride h = m/2)."""
    h = m // 2
    j = np.arange(n)
    p = j % m
    first = p < h
    q = np.where(first, p, p - h)
    tw = np.exp(2j * np.pi * ((_pow5(max(h, 1), 4 * m)[q] * (n // m)) % (4 * n)) / (4 * n))
    d0 = np.zeros(n, np.complex128)
    dp = np.zeros(n, np.complex128)  # rot +h: x[j + h] (first half of each block)
    dm = np.zeros(n, np.complex128)  # rot -h: x[j - h] (second half)
    if not inverse:  # out = x + D x' ; x - D x'
        d0[first], dp[first] = 1, tw[first]
        dm[~first], d0[~first] = 1, -tw[~first]
    else:  # out = (x + x') / 2 ; conj(D) (x - x') / 2
        d0[first], dp[first] = 0.5, 0.5
        dm[~first], d0[~first] = 0.5 * np.conj(tw[~first]), -0.5 * np.conj(tw[~first])
    out = {0: d0}
    for k, d in ((h % n, dp), ((-h) % n, dm)):
        out[k] = out[k] + d if k in out else d
    return out


def fft_stages(n: int, *, inverse: bool = False) -> list:
    """The butterfly stages as diagonal forms, in application order: S_2, S_4, ..., S_n
    (V R = S_n ... S_2), or with ``inverse`` S_n^-1, ..., S_2^-1 (R V^-1 = S_2^-1 ... S_n^-1)."""
    n = _check_n(n)
    ms = [1 << s for s in range(1, n.bit_length())]
    if inverse:
        ms = ms[::-1]
    return [_stage(n, m, inverse) for m in ms]


def split_stages(num_stages: int, levels: int, *, front: bool) -> tuple:
    """Stages per phase: as even as possible, the larger phases first (``front``) or last."""
    top = max(num_stages, 1)
    if isinstance(levels, bool) or not isinstance(levels, numbers.Integral) or not 1 <= levels <= top:
        raise ValueError(f"levels must be an integer in [1, {top}] (one stage at least "
                         f"per phase), got {levels!r}")
    base, extra = divmod(num_stages, levels)
    counts = [base + 1] * extra + [base] * (levels - extra)
    return tuple(counts if front else counts[::-1])


def _phases(stages: list, counts, factor) -> list:
    if sum(counts) != len(stages) or any(c < 1 for c in counts):
        raise ValueError(f"radix_logs {tuple(counts)} must be positive and sum to log2(slots) = "
                         f"{len(stages)}")
    root = complex(factor) ** (1.0 / len(counts))
    out, i = [], 0
    for c in counts:
        ph = stages[i]
        for s in stages[i + 1:i + c]:
            ph = lintrans.compose(s, ph)  # later stages act after (on the left)
        out.append({k: root * d for k, d in ph.items()})
        i += c
    return out


def _signed(k: int, n: int) -> int:
    return k - n if k > n // 2 else k


def _pack_cts_last(diags: dict, n: int) -> dict:
    """n-slot phase A -> 2n-slot phase mapping [x, x] to [A x, -i A x]."""
    return {_signed(k, n) % (2 * n): np.concatenate([d, -1j * d]) for k, d in diags.items()}


def _pack_stc_first(diags: dict, n: int) -> dict:
    """n-slot phase P -> 2n-slot Q diag(mask): Q = blockdiag(P, P), mask = [1 (n), i (n)]."""
    out = {}
    j = np.arange(n)
    mask = np.concatenate([np.ones(n), np.full(n, 1j)])
    for k, d in diags.items():
        wrap = (j + k) >= n  # column (j + k) mod n: 2n-diagonal k, or k - n where it wraps
        for kk, rows in ((k, ~wrap), (k - n, wrap)):
            if not np.any(d[rows] != 0):
                continue
            full = np.zeros(2 * n, np.complex128)
            full[:n][rows] = d[rows]
            full[n:][rows] = d[rows]
            key = kk % (2 * n)
            full *= mask[(np.arange(2 * n) + key) % (2 * n)]
            out[key] = out[key] + full if key in out else full
    return out


def cts_matrices(n: int, levels: int, *, factor: complex = 1.0, radix_logs=None,
                 packed: bool = False) -> list:
    """CtS phases (diagonal forms, application order) whose product is factor * R V^-1 (with
    ``packed``, the last one extended to 2n slots, see the module docstring)."""
    n = _check_n(n)
    stages = fft_stages(n, inverse=True)
    counts = split_stages(len(stages), levels, front=True) if radix_logs is None else tuple(radix_logs)
    phases = _phases(stages, counts, factor)
    if packed:
        phases[-1] = _pack_cts_last(phases[-1], n)
    return phases


def stc_matrices(n: int, levels: int, *, factor: complex = 1.0, radix_logs=None,
                 packed: bool = False) -> list:
    """StC phases (diagonal forms, application order) whose product is factor * V R (with
    ``packed``, the first one is the 2n-slot Q diag([1, i]), to be followed by + rot_n)."""
    n = _check_n(n)
    stages = fft_stages(n)
    counts = split_stages(len(stages), levels, front=False) if radix_logs is None else tuple(radix_logs)
    phases = _phases(stages, counts, factor)
    if packed:
        phases[0] = _pack_stc_first(phases[0], n)
    return phases


# -- plans and evaluation ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class DFTPlan:
    """A CtS or StC plan (a pytree): ``phases``, one
    :class:`jax_fhe.circuits.lintrans.LinearTransform` per level (application order,
    levels ``level``, ``level`` - 1, ...). Static: ``kind`` ("cts" / "stc"), ``slots`` (n),
    ``packed``, ``factor``."""

    phases: tuple
    kind: str
    slots: int
    packed: bool
    factor: complex

    @property
    def level(self) -> int:
        """The level the plan's first phase works at (its input level)."""
        return self.phases[0].level

    @property
    def depth(self) -> int:
        """Levels the plan consumes (one per phase)."""
        return len(self.phases)

    def __repr__(self) -> str:
        return (f"DFTPlan({self.kind}, slots={self.slots}, packed={self.packed}, levels "
                f"{self.level} -> {self.level - self.depth}, phases={list(self.phases)})")


jax.tree_util.register_dataclass(DFTPlan, data_fields=["phases"],
                                 meta_fields=["kind", "slots", "packed", "factor"])


def _make(kind, ctx, slots, level, levels, factor, radix_logs, packed, baby, giant_cost):
    if not isinstance(ctx, CKKSContext):
        raise TypeError(f"make_{kind}: expected a CKKSContext, got {type(ctx).__name__}")
    p = ctx.params
    n = _check_n(slots)
    if n > p.slots:
        raise ValueError(f"make_{kind}: {n} slots exceed N/2 = {p.slots}")
    if packed and 2 * n > p.slots:
        raise ValueError(f"make_{kind}: packed needs 2 slots <= N/2 (slots <= {p.slots // 2}), got {n}")
    if n == 1:
        raise ValueError(f"make_{kind}: one slot has no FFT stage; use ckks operations")
    p.check_level(level)
    if radix_logs is not None and len(tuple(radix_logs)) != levels:
        raise ValueError(f"make_{kind}: radix_logs {tuple(radix_logs)} gives {len(tuple(radix_logs))} "
                         f"phases, levels is {levels}")
    if level - levels < 0:
        raise ValueError(f"make_{kind}: {levels} phases from level {level} go below level 0")
    build = cts_matrices if kind == "cts" else stc_matrices
    mats = build(n, levels, factor=factor, radix_logs=radix_logs, packed=packed)
    phases = tuple(lintrans.make_linear_transform(m, ctx, level - i, baby=baby, giant_cost=giant_cost)
                   for i, m in enumerate(mats))
    return DFTPlan(phases=phases, kind=kind, slots=n, packed=bool(packed), factor=complex(factor))


def make_cts(ctx: CKKSContext, slots: int, level: int, levels: int, *, factor: complex = 1.0,
             radix_logs=None, packed: bool = False, baby: int | None = None,
             giant_cost: float = 2.0) -> DFTPlan:
    """CoeffToSlot plan for ciphertexts packing ``slots`` slots at ``level``: ``levels``
    phases (levels level .. level - levels + 1), output at level - levels. ``radix_logs``:
    stages per phase (default: even, larger first); ``baby``: BSGS baby modulus for every
    phase (default: per phase, see :func:`jax_fhe.circuits.lintrans.bsgs_split` and its
    ``giant_cost``)."""
    return _make("cts", ctx, slots, level, levels, factor, radix_logs, packed, baby, giant_cost)


def make_stc(ctx: CKKSContext, slots: int, level: int, levels: int, *, factor: complex = 1.0,
             radix_logs=None, packed: bool = False, baby: int | None = None,
             giant_cost: float = 2.0) -> DFTPlan:
    """SlotToCoeff plan (see :func:`make_cts`); default radices: even, larger last."""
    return _make("stc", ctx, slots, level, levels, factor, radix_logs, packed, baby, giant_cost)


def rotation_steps(*plans) -> tuple:
    """Rotation steps the plans need keys for (packed StC adds n)."""
    out = set()
    for pl in plans:
        if not isinstance(pl, DFTPlan):
            raise TypeError(f"rotation_steps: expected DFTPlan, got {type(pl).__name__}")
        out |= set(lintrans.rotation_steps(*pl.phases))
        if pl.packed and pl.kind == "stc":
            out.add(pl.slots)
    return tuple(sorted(out))


def _run(ct, plan, ctx, evk, kind):
    if not isinstance(plan, DFTPlan) or plan.kind != kind:
        raise TypeError(f"expected a DFTPlan of kind {kind!r}, got {plan!r}")
    if not isinstance(ct, Ciphertext):
        raise TypeError(f"expected a Ciphertext, got {type(ct).__name__}")
    want = 2 * plan.slots if plan.packed and kind == "stc" else plan.slots
    if ct.slots != want:
        raise ValueError(f"the {kind} plan takes ciphertexts packing {want} slots, got {ct.slots}")
    for i, lt in enumerate(plan.phases):
        ct = lintrans.linear_transform(ct, lt, ctx, evk)
        if kind == "stc" and plan.packed and i == 0:  # v + rot_n(v): both halves hold V(a + ib)
            ct = ckks.add(ct, ckks.rotate(ct, plan.slots, ctx, evk), ctx)
            ct = dataclasses.replace(ct, slots=plan.slots)
    return ct


def coeffs_to_slots(ct: Ciphertext, plan: DFTPlan, ctx: CKKSContext, evk: EvalKeys) -> Ciphertext:
    """CtS: ct (``plan.slots`` slots, at ``plan.level`` or above) -> ct at plan.level -
    plan.depth with the same scale label, slots as in the module docstring (packed: 2n)."""
    return _run(ct, plan, ctx, evk, "cts")


def slots_to_coeffs(ct: Ciphertext, plan: DFTPlan, ctx: CKKSContext, evk: EvalKeys) -> Ciphertext:
    """StC: ct (n slots; packed: 2n real slots) -> ct packing n slots at plan.level -
    plan.depth, same scale label."""
    return _run(ct, plan, ctx, evk, "stc")


def conj_add(ct: Ciphertext, ctx: CKKSContext, evk: EvalKeys) -> Ciphertext:
    """ct + conj(ct): twice the real part of every slot (needs the conjugation key)."""
    return ckks.add(ct, ckks.conjugate(ct, ctx, evk), ctx)


def real_imag_split(ct: Ciphertext, ctx: CKKSContext, evk: EvalKeys) -> tuple:
    """(ct + conj(ct), -i (ct - conj(ct))): twice the real and twice the imaginary parts, two
    real-valued ciphertexts (one conjugation, no level)."""
    c = ckks.conjugate(ct, ctx, evk)
    re = ckks.add(ct, c, ctx)
    im = ckks.neg(ckks.mul_i(ckks.sub(ct, c, ctx), ctx), ctx)
    return re, im
