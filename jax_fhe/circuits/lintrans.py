"""Linear transforms of slot vectors given in diagonal form, evaluated baby-step giant-step.

**Diagonal form.** An n x n complex matrix M (n = the slot count) is a dict ``{k: d_k}`` of
its non-zero generalized diagonals, d_k[j] = M[j, (j + k) mod n] (host ``complex128[n]``), so
that M z = sum_k d_k * rot_k(z) with rot_k(z)[j] = z[(j + k) mod n] (``ckks.rotate(ct, k)``).
Products of matrices stay in this form (:func:`compose`), which is how the DFT merges its
butterfly stages.

**BSGS.** Each index k splits as k = g + b with b = k mod B (the baby step, B a power of two)
and g = k - b (the giant step). Pulling rot_g out of the sum,

    M z = sum_g rot_g( sum_b rot_{-g}(d_{g+b}) * rot_b(z) ),

so the plan stores the *pre-rotated* diagonals rot_{-g}(d_{g+b}), the baby rotations share one
ModUp (``ckks.rotate_hoisted``) and each giant step costs one rotation of an accumulated sum.
B is chosen to minimize (baby rotations) + 2 (giant rotations) unless given.

**Levels and scales (Cheddar's rule).** The diagonals are encoded at the transform's level l
with scale rho_l = ``params.ratio(l)``: the products have scale s rho_l, the sum is rescaled
once, and the result is at level l - 1 with the input's scale label s unchanged. The
transform consumes exactly one level.

**Double hoisting** (Bossuat et al., EUROCRYPT 2021; Cheddar's default). The baby rotations
never leave the extended basis QP of key switching:
c1 is decomposed once, each baby step is the key product *without* ModDown
(:func:`jax_fhe.rlwe.keyswitch.product_extended`) plus P c0, permuted by its automorphism; the
diagonals, encoded on the special rows too, multiply them there; each giant sum's c1 is
brought down once (ModDown), switched and permuted back into QP; one ModDown of the total
ends the transform. Per baby step this saves ModDown's inverse NTT, conversion and forward NTT
(n16-boot bootstrap on an H100: 31.3 ms against 32.5 with every rotation switched back at once).

**Plans are pytrees.** :class:`LinearTransform` holds the encoded diagonals as one device array
``uint32[P, L (+ alpha_p), N / r]`` (a leaf) and the BSGS structure as static data: build it once on
the host with :func:`make_linear_transform` and pass it into jitted functions as an argument.
r = N / 2n for n slots: a plaintext packing n < N/2 slots is a polynomial in X^r, whose NTT
repeats each value r times in adjacent positions, so the plan holds each run once
(``ops.diagonal_sums`` reads it that way): ResNet-20's 2^14 slots at N = 2^16 halve the
diagonals' memory and reads.

**Compact plans** (``compact=True``) hold each diagonal as its coefficient polynomial in small
integers, int32[P, N / r] (a polynomial in X^r: every r-th coefficient) with one power-of-two
unit per diagonal (``ckks.compact_coefficients``),
and expands it on the device where it is used, one giant step's diagonals at a time (k reduced
mod each prime of the extended rows, times the unit, forward NTT): L + alpha_p times less memory,
for a forward NTT per diagonal per use. |k| <= 2^30: the coefficients are those of the encoded
plan rounded to a multiple of 2^s, s = max(0, log2 of the largest one - 30), so bit-identical
when they are below 2^30 (at scale 2^40: diagonals below about 2^-10); ``max_shift`` is the
largest s.
"""
from __future__ import annotations

import dataclasses
import numbers

import jax
import jax.numpy as jnp
import numpy as np

from .. import ckks, ops
from ..ckks import CKKSContext, CKKSParams, Ciphertext, EvalKeys
from ..rlwe import keyswitch
from ..rns.host import host_map

__all__ = ["LinearTransform", "apply_diagonals", "bsgs_split", "compose",
           "diagonals", "double_hoisted", "linear_transform", "make_linear_transform", "matrix",
           "rotation_steps"]

_ENCODE_CHUNK = 8
_COMPACT_CHUNK = 64
_COMPACT_BITS = 30      # |k| <= 2^30 keeps int32 and is reduced mod every prime in the program


# -- host helpers: diagonal form -------------------------------------------------------------------

def _check_diags(diags, n: int | None = None, what: str = "diagonals") -> tuple:
    if not isinstance(diags, dict) or not diags:
        raise TypeError(f"{what}: expected a non-empty dict {{k: complex[n]}}")
    out, size = {}, n
    for k, d in diags.items():
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise TypeError(f"{what}: diagonal indices must be ints, got {k!r}")
        d = np.asarray(d, dtype=np.complex128)
        if d.ndim != 1 or (size is not None and d.shape[0] != size):
            raise ValueError(f"{what}: diagonal {k} has shape {d.shape}, expected ({size},)")
        size = d.shape[0]
        k = int(k) % size
        out[k] = out[k] + d if k in out else d
    return out, size


def diagonals(m, *, tol: float = 0.0) -> dict:
    """Diagonal form {k: d_k} of a square matrix (diagonals with all |entries| <= tol dropped)."""
    m = np.asarray(m, dtype=np.complex128)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"diagonals: expected a square matrix, got shape {m.shape}")
    n = m.shape[0]
    j = np.arange(n)
    out = {}
    for k in range(n):
        d = m[j, (j + k) % n]
        if np.abs(d).max() > tol:
            out[k] = d
    return out


def matrix(diags: dict, n: int | None = None) -> np.ndarray:
    """The dense matrix complex128[n, n] of a diagonal form."""
    diags, n = _check_diags(diags, n, "matrix")
    m = np.zeros((n, n), dtype=np.complex128)
    j = np.arange(n)
    for k, d in diags.items():
        m[j, (j + k) % n] += d
    return m


def apply_diagonals(diags: dict, z) -> np.ndarray:
    """M z on the host: sum_k d_k * roll(z, -k) over the last axis (numpy reference)."""
    z = np.asarray(z, dtype=np.complex128)
    diags, _ = _check_diags(diags, z.shape[-1], "apply_diagonals")
    return sum(d * np.roll(z, -k, axis=-1) for k, d in diags.items())


def compose(a: dict, b: dict) -> dict:
    """Diagonal form of the product A B: diagonal (i + k) accumulates a_i * rot_i(b_k)."""
    a, n = _check_diags(a, None, "compose")
    b, _ = _check_diags(b, n, "compose")
    out = {}
    for i, da in a.items():
        for k, db in b.items():
            key = (i + k) % n
            term = da * np.roll(db, -i)
            out[key] = out[key] + term if key in out else term
    return out


def bsgs_split(indices, n: int, *, baby: int | None = None, giant_cost: float = 2.0) -> tuple:
    """Choose the baby-step modulus B (a power of two dividing n) for diagonal ``indices``
    (mod n) and split them: returns (B, {g: (b, ...)}) with k = g + b, b = k mod B.

    Indices are read as signed (in (-n/2, n/2]) so that a band around 0 gives giant steps
    symmetric around 0. Default B minimizes (# non-zero baby steps) + ``giant_cost`` (# non-zero
    giant steps): a baby rotation shares its ModUp and stays in the extended basis, a giant one
    costs a ModDown and a key switch of its own."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"bsgs_split: n must be a power of two, got {n}")
    ks = sorted({int(k) % n for k in indices})
    if not ks:
        raise ValueError("bsgs_split: no diagonal")
    signed = [k - n if k > n // 2 else k for k in ks]

    def split(bb):
        groups = {}
        for k in signed:
            b = k % bb
            groups.setdefault((k - b) % n, []).append(b)
        return {g: tuple(sorted(bs)) for g, bs in sorted(groups.items())}

    if baby is not None:
        if baby < 1 or baby & (baby - 1) or n % baby:
            raise ValueError(f"bsgs_split: baby must be a power of two dividing {n}, got {baby}")
        return baby, split(baby)
    best = None
    bb = 1
    while bb <= n:
        g = split(bb)
        babies = {b for bs in g.values() for b in bs} - {0}
        cost = len(babies) + giant_cost * len(set(g) - {0})
        if best is None or cost < best[0]:
            best = (cost, bb, g)
        bb *= 2
    return best[1], best[2]


# -- the plan ---------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class LinearTransform:
    """A BSGS plan with its pre-rotated diagonals (a pytree).

    data:   encoded: uint32[P, L + alpha_p, N / r]: plaintext p = rot_{-g}(d_{g+b}) in the NTT
            domain at ``level`` (row order of ``params.rows(level)``, then the special rows: the
            products are taken in the extended basis), scale ``scale``; one per (g, b); each
            word stands for r = N / 2 ``slots`` adjacent NTT values, all equal (module doc).
            compact: int32[P, N / r], the coefficients k of each p with p = 2^s k, every r-th
            (the others are 0; module doc).
    units:  compact only: uint32[P, L + alpha_p], 2^s mod each prime of those rows (else None).
    shifts: compact only: int32[P], each diagonal's s (``max_shift`` is the largest; else None).
    Static: ``params``; ``level``; ``scale`` (default rho_level); ``slots`` (n); ``baby`` (B);
            ``giants``: ((g, ((b, index into data), ...)), ...) in increasing g, each giant
            step's indices consecutive. Plans of the same structure share their jit compilations.
    """

    data: jax.Array
    units: jax.Array | None
    params: CKKSParams
    level: int
    scale: float
    slots: int
    baby: int
    giants: tuple
    shifts: jax.Array | None = None

    @property
    def max_shift(self) -> int:
        """The largest power-of-two unit's exponent s of a compact plan (0 when encoded)."""
        return 0 if self.shifts is None else int(np.max(np.asarray(self.shifts)))

    @property
    def compact(self) -> bool:
        """Whether the diagonals are held as small coefficients (expanded where used)."""
        return self.units is not None

    @property
    def baby_steps(self) -> tuple:
        """The baby-step rotations (hoisted, one shared decomposition), sorted."""
        return tuple(sorted({b for _, bs in self.giants for b, _ in bs}))

    @property
    def giant_steps(self) -> tuple:
        """The giant-step rotations, in increasing order."""
        return tuple(g for g, _ in self.giants)

    def __repr__(self) -> str:
        form = ""
        if self.compact:
            form = ", compact" if isinstance(self.shifts, jax.core.Tracer) else f", compact (max shift {self.max_shift})"
        return (f"LinearTransform(level={self.level}, slots={self.slots}, diagonals={self.data.shape[0]}, "
                f"baby={len(self.baby_steps)}, giant={len(self.giants)}{form}, params={self.params.name!r})")


jax.tree_util.register_dataclass(LinearTransform, data_fields=["data", "units", "shifts"],
                                 meta_fields=["params", "level", "scale", "slots", "baby", "giants"])


def make_linear_transform(diags: dict, ctx: CKKSContext, level: int, *, baby: int | None = None,
                          giant_cost: float = 2.0, scale: float | None = None,
                          compact: bool = False) -> LinearTransform:
    """Encode the BSGS plan of ``diags`` ({k: complex[n]}, n a power of two <= N/2 slots) for
    ciphertexts at ``level`` (host work: one encoding per diagonal).

    baby:     the baby-step modulus B (default: :func:`bsgs_split`'s choice, weighing a giant
              step as ``giant_cost`` baby steps).
    scale:    the plaintexts' scale (default rho_level: the transform keeps the scale label).
    compact:  hold the diagonals as small coefficients, expanded on the device where used
              (module doc): 4 N / r bytes per diagonal instead of 4 (L + alpha_p) N / r."""
    if not isinstance(ctx, CKKSContext):
        raise TypeError(f"make_linear_transform: expected a CKKSContext, got {type(ctx).__name__}")
    p = ctx.params
    level = p.check_level(level)
    if level == 0:
        raise ValueError("make_linear_transform: a transform consumes a level; level 0 has none")
    diags, n = _check_diags(diags, None, "make_linear_transform")
    if n & (n - 1) or n > p.slots:
        raise ValueError(f"make_linear_transform: diagonals have length {n}; expected a power of "
                         f"two <= N/2 = {p.slots}")
    scale = float(p.ratio(level)) if scale is None else float(scale)
    b, groups = bsgs_split(diags, n, baby=baby, giant_cost=giant_cost)
    vals, giants = [], []
    for g, bs in groups.items():
        entry = []
        for bb in bs:
            entry.append((bb, len(vals)))
            vals.append(np.roll(diags[(g + bb) % n], g))  # rot_{-g}(d_{g+b})
        giants.append((g, tuple(entry)))
    repeat = p.n // (2 * n)
    if compact:
        rows = tuple(p.rows(level)) + tuple(p.special_rows)   # primes below 2^31 (RLWEParams): int32

        def coefficients(i):   # every r-th coefficient: the others are 0 for n slots
            k, sh = ckks.compact_coefficients(np.stack(vals[i:i + _COMPACT_CHUNK]), ctx, level=level, scale=scale,
                                              bits=_COMPACT_BITS)
            if repeat > 1 and np.any(k.reshape(len(k), -1, repeat)[:, :, 1:]):
                raise RuntimeError(f"make_linear_transform: a {n}-slot plaintext has coefficients off the "
                                   f"multiples of {repeat}; the sparse form would be wrong")
            return k[:, ::repeat], sh

        parts = host_map(coefficients, range(0, len(vals), _COMPACT_CHUNK))
        k = np.concatenate([kk for kk, _ in parts])
        shifts = np.concatenate([ss for _, ss in parts])
        units = np.array([[pow(2, int(sh), int(p.all_primes[r])) for r in rows] for sh in shifts],
                         dtype=np.uint32)
        return LinearTransform(data=jnp.asarray(k), units=jnp.asarray(units), params=p, level=level,
                               scale=scale, slots=n, baby=b, giants=tuple(giants),
                               shifts=jnp.asarray(shifts.astype(np.int32)))
    # a few diagonals per encode (the host's int64 residues of all of them at N = 2^16 would
    # take gigabytes), every r-th NTT value kept: the others repeat it (checked on the first chunk)
    def encode(i):
        full = ckks.encode_extended(np.stack(vals[i:i + _ENCODE_CHUNK]), ctx, level=level, scale=scale)
        if i == 0 and repeat > 1 and not bool(jnp.array_equal(full[..., ::repeat], full[..., repeat - 1::repeat])):
            raise RuntimeError(f"make_linear_transform: a {n}-slot plaintext's NTT values do not repeat "
                               f"{repeat} times in adjacent positions; the sparse form would be wrong")
        return full[..., ::repeat]

    chunks = host_map(encode, range(0, len(vals), _ENCODE_CHUNK))
    data = chunks[0] if len(chunks) == 1 else jnp.concatenate(chunks)
    return LinearTransform(data=data, units=None, params=p, level=level, scale=scale, slots=n, baby=b,
                           giants=tuple(giants))


def rotation_steps(*plans) -> tuple:
    """Sorted rotation steps (in [1, n)) the given plans need keys for."""
    out = set()
    for lt in plans:
        if not isinstance(lt, LinearTransform):
            raise TypeError(f"rotation_steps: expected LinearTransform plans, got {type(lt).__name__}")
        out |= set(lt.baby_steps) | set(lt.giant_steps)
    return tuple(sorted(out - {0}))


# -- evaluation -------------------------------------------------------------------------------------

def _rotation_key(evk: EvalKeys, step: int):
    key = evk.rotations.get(step)
    if key is None:
        raise ValueError(f"no rotation key for step {step}; keys exist for steps {sorted(evk.rotations)}")
    return key


def _expand_plaintexts(lt: LinearTransform, entries, ring, ext, after) -> jax.Array:
    """A compact plan's giant step's plaintexts uint32[len(entries), L + alpha_p, N] (NTT,
    extended rows), expanded after ``after`` (the running total) so that XLA expands one giant
    step at a time instead of every diagonal of the program up front."""
    i0 = entries[0][1]
    data, _ = jax.lax.optimization_barrier((lt.data[i0:i0 + len(entries)], after))
    repeat = ring.n // data.shape[-1]     # the polynomial in X^r: zeros between the held coefficients
    if repeat > 1:
        data = jnp.pad(data[..., None], ((0, 0), (0, 0), (0, repeat - 1))).reshape(data.shape[0], ring.n)
    q = jnp.asarray(np.array([ring.primes[r] for r in ext], dtype=np.int32))[:, None]
    lifted = jnp.remainder(data[:, None, :], q).astype(jnp.uint32)        # k mod q_r in [0, q_r)
    units = lt.units[i0:i0 + len(entries)]
    scaled = ops.mul_mod(lifted, jnp.broadcast_to(units[..., None], lifted.shape), ring, ext)
    return ops.ntt(scaled, ring, ext)


def double_hoisted(ct: Ciphertext, lt: LinearTransform, ctx: CKKSContext, evk: EvalKeys) -> Ciphertext:
    """M ct before the rescale (at lt.level, scale ct.scale * lt.scale), double-hoisted (module
    doc): every baby rotation and product stays in the extended basis; one ModDown per giant
    step's c1, one for the total."""
    total = _double_hoisted_total(ct, lt, ctx, evk)
    data = keyswitch.mod_down(total, ctx.ring, ctx.keyswitch_tables(lt.level))
    return ct.replace(data=data, scale=ct.scale * lt.scale)


def _double_hoisted_total(ct: Ciphertext, lt: LinearTransform, ctx: CKKSContext, evk: EvalKeys) -> jax.Array:
    """P M ct over the extended basis, uint32[..., 2, L + alpha_p, N]: :func:`double_hoisted`
    before its last ModDown."""
    p = ctx.params
    ring, tables = ctx.ring, ctx.keyswitch_tables(lt.level)
    ext = keyswitch.extended_rows(tables)
    c0, c1 = ct.data[..., 0, :, :], ct.data[..., 1, :, :]
    dec = keyswitch.decompose(c1, ring, tables)
    pc0 = keyswitch.lift_extended(c0, ring, tables)
    rots = {}
    for b in lt.baby_steps:                      # rot_b(ct) * P in QP: (P c0 + u0, u1), permuted
        if b == 0:
            rots[0] = jnp.stack([pc0, keyswitch.lift_extended(c1, ring, tables)], axis=-3)
            continue
        u = keyswitch.product_extended(c1, dec, _rotation_key(evk, b), ring, tables)
        rots[b] = ops.automorphism_ntt_add(u, pc0, ops.galois_element(b, p.n), ring, ext)
    # sum_b pt_{g,b} rot_b in QP for every giant step: one kernel reads the baby rotations where
    # they lie and each diagonal once (compact plans: one call per giant step, whose plaintexts
    # are expanded just before)
    babies = tuple(rots)
    xs = [rots[b] for b in babies]
    index = np.full((len(lt.giants), len(babies)), -1, dtype=np.int32)
    for gi, (_, entries) in enumerate(lt.giants):
        for b, d in entries:
            index[gi, babies.index(b)] = d
    sums = None if lt.compact else ops.diagonal_sums(xs, lt.data, index, ring, ext)
    total = None
    for gi, (g, entries) in enumerate(lt.giants):
        if sums is None:
            pts = _expand_plaintexts(lt, entries, ring, ext, total if total is not None else dec)
            local = np.where(index[gi:gi + 1] >= 0, index[gi:gi + 1] - entries[0][1], -1)
            acc = ops.diagonal_sums(xs, pts, local, ring, ext)[0]
        else:
            acc = sums[gi]
        if g:                                    # rot_g of the sum: c1 down, switched, back in QP
            y = keyswitch.mod_down(acc[..., 1, :, :], ring, tables)
            u = keyswitch.product_extended(y, keyswitch.decompose(y, ring, tables), _rotation_key(evk, g),
                                           ring, tables)
            acc = ops.automorphism_ntt_add(u, acc[..., 0, :, :], ops.galois_element(g, p.n), ring, ext)
        total = acc if total is None else ops.add_mod(total, acc, ring, ext)
    return total


def linear_transform(ct: Ciphertext, lt: LinearTransform, ctx: CKKSContext, evk: EvalKeys, *,
                     rescale: bool = True) -> Ciphertext:
    """M ct for the plan ``lt``.

    ct:  at ``lt.level`` (a higher level is first lowered with ``ckks.level_down``), packing
         ``lt.slots`` slots, or a divisor of it (an n-periodic vector is also a 2n-periodic
         one: the output then packs ``lt.slots``).
    evk: rotation keys for :func:`rotation_steps` (lt).
    Returns the result at lt.level - 1 with ct's scale (with ``rescale=False``: at lt.level
    with scale ct.scale * lt.scale)."""
    if not isinstance(lt, LinearTransform):
        raise TypeError(f"linear_transform: expected a LinearTransform, got {type(lt).__name__}")
    if not isinstance(ct, Ciphertext):
        raise TypeError(f"linear_transform: expected a Ciphertext, got {type(ct).__name__}")
    if ct.params != lt.params:
        raise ValueError(f"linear_transform: ciphertext is for {ct.params.name!r}, plan for "
                         f"{lt.params.name!r}")
    if ct.level < lt.level:
        raise ValueError(f"linear_transform: the plan is for level {lt.level}, the ciphertext is at "
                         f"level {ct.level}")
    if ct.slots != lt.slots:
        if lt.slots % ct.slots:
            raise ValueError(f"linear_transform: the plan acts on {lt.slots} slots, the ciphertext "
                             f"packs {ct.slots}")
        ct = dataclasses.replace(ct, slots=lt.slots)
    if ct.level > lt.level:
        ct = ckks.level_down(ct, ctx, lt.level)
    if not rescale:
        return double_hoisted(ct, lt, ctx, evk)
    # the total's ModDown and the rescale: one division by P rho where the level allows
    data = ckks.mod_down_rescale(_double_hoisted_total(ct, lt, ctx, evk), ctx, lt.level)
    scale = ct.scale * lt.scale / float(lt.params.ratio(lt.level))
    if lt.scale == float(lt.params.ratio(lt.level)):  # the label is unchanged (to rounding)
        scale = ct.scale
    return ct.replace(data=data, level=lt.level - 1, scale=scale)
