"""Named CKKS parameter sets and the prime-chain generator behind them.

The generator walks the levels upward. A level is given by its *shape* (m, t): the first m
"main" primes (about 2^30) and the first t "terminal" primes (about 2^25). Rows are laid out as
Cheddar does: terminals reversed, then mains, so every level is one contiguous window of rows:

    rows = [t_{T-1}, ..., t_1, t_0, m_0, m_1, ..., m_{M-1}]     level (m, t) = rows [T-t, T+m)

When a level introduces new main primes, the generator picks them (from the primes = 1 mod 2N
nearest the ideal size) so that the scale stays near 2^log_scale, looking ahead across the
following levels that introduce no prime (their ratio is fixed by earlier choices). Levels
meant for bootstrapping target a ratio instead (2^58 or 2^60 for a pair of primes). Special
primes are the largest primes below 2^31. Everything is exact integer code and takes about a
second for N = 2^16. Presets are built on first use and cached (in memory only).

The scale plan is described in docs/ckks-parameters.md.
"""
from __future__ import annotations

import functools
import itertools
import math

from ..rns.primes import is_prime, ntt_primes
from .params import CKKSParams

_WINDOW = 12  # candidate primes tried per new prime


def cheddar_shape(level: int) -> tuple:
    """(mains, terminals) of ``level`` in the 3-level cycle of 40-bit levels with ~30-bit mains
    and four ~25-bit terminals: (0,2), (3,0), (1,4), (4,2), (7,0), (5,4), (8,2), (11,0), ...

    Rescaling alternates "drop 3 mains, add 2 terminals" (90 - 50 = 40 bits) and "drop 4
    terminals, add 2 mains" (100 - 60 = 40 bits)."""
    if level == 0:
        return (0, 2)
    k, c = divmod(level - 1, 3)
    return ((3 + 4 * k, 0), (1 + 4 * k, 4), (4 + 4 * k, 2))[c]


def _nearest_primes(x: float, n: int, count: int, used: set) -> list:
    """``count`` unused primes = 1 mod 2n below 2^31 whose values are nearest to ``x``."""
    step = 2 * n
    k0 = max(1, int(round((x - 1) / step)))
    out, up, down = [], k0, k0 - 1
    while len(out) < count:
        for k in (up, down):
            q = k * step + 1
            if 2 < q < (1 << 31) and q not in used and is_prime(q):
                out.append(q)
        up += 1
        down -= 1
        if down < 1 and up * step + 1 >= (1 << 31):
            break
    if not out:
        raise ValueError(f"no NTT-friendly prime near {x:.3g} for N={n}")
    return sorted(out, key=lambda q: abs(math.log2(q) - math.log2(x)))[:count]


def build_chain(n: int, shapes, targets, *, log_scale: float, ter_bits: int = 25,
                num_special: int):
    """Choose primes for a level plan.

    shapes:  per level, (mains, terminals) prefix counts.
    targets: per level >= 1, ``None`` (keep the default scale near 2^log_scale) or a float
             (the log2 of the wanted rescale ratio, e.g. 58.0 for a bootstrapping level).
    Returns (q_primes, p_primes, levels) for :class:`CKKSParams`.
    """
    big_t = max(t for _, t in shapes)
    big_m = max(m for m, _ in shapes)
    terms = list(ntt_primes(ter_bits, big_t, n)) if big_t else []
    used = set(terms)
    mains: list = [None] * big_m
    log2 = {}

    def lg(q):
        if q not in log2:
            log2[q] = math.log2(q)
        return log2[q]

    def level_primes(l, assign=None):
        m, t = shapes[l]
        ps = terms[:t]
        for j in range(m):
            ps.append(assign[j] if assign and j in assign else mains[j])
        return ps

    def log_q(l, assign=None):
        return sum(lg(q) for q in level_primes(l, assign))

    log_scales = [float(log_scale)]
    for l in range(1, len(shapes)):
        new = [j for j in range(shapes[l][0]) if mains[j] is None]
        if new:
            ahead = [l]
            while ahead[-1] + 1 < len(shapes) and all(
                    mains[j] is not None or j in new for j in range(shapes[ahead[-1] + 1][0])):
                ahead.append(ahead[-1] + 1)
            known = sum(lg(q) for q in level_primes(l) if q is not None)
            want = targets[l - 1] if targets[l - 1] is not None else 2 * log_scale - log_scales[-1]
            ideal = 2 ** ((log_q(l - 1) + want - known) / len(new))
            cands = _nearest_primes(ideal, n, _WINDOW, used)
            best, best_cost = None, math.inf
            for combo in itertools.permutations(cands, len(new)):
                assign = dict(zip(new, combo))
                ls, cost = log_scales[-1], 0.0
                for a in ahead:
                    rho = log_q(a, assign) - log_q(a - 1, assign)
                    if targets[a - 1] is None:
                        ls = (ls + rho) / 2
                        cost += abs(ls - log_scale)
                    else:
                        ls = (ls + rho) / 2
                        cost += abs(rho - targets[a - 1])
                if cost < best_cost:
                    best, best_cost = assign, cost
            for j, q in best.items():
                mains[j] = q
                used.add(q)
        log_scales.append((log_scales[-1] + log_q(l) - log_q(l - 1)) / 2)
    special = ntt_primes(31, num_special, n, exclude=used)
    q_primes = tuple(reversed(terms)) + tuple(mains)
    levels = tuple(tuple(range(big_t - t, big_t + m)) for m, t in shapes)
    return q_primes, tuple(special), levels


@functools.cache
def ckks_n16_boot() -> CKKSParams:
    """N = 2^16 bootstrappable set in the spirit of Theodosian Table I / Cheddar bootparam_40:
    47 ciphertext limbs (43 mains + 4 terminals) + 12 special limbs (alpha = 12, dnum = 4),
    log2(PQ) <= 1746, scale 2^40, dense secret of Hamming weight 2^15. Levels 0..16 are 40-bit
    levels (fresh encryptions at 16); levels 17..24 drop pairs of ~29-bit primes (2^58, for
    EvalMod), 25..26 pairs of ~30-bit primes (2^60, CoeffToSlot), 27..28 pairs of terminals
    (2^50, CoeffToSlot)."""
    shapes = [cheddar_shape(l) for l in range(17)]
    targets = [None] * 16
    for _ in range(8):
        shapes.append((shapes[-1][0] + 2, 0))
        targets.append(57.9)
    for _ in range(2):
        shapes.append((shapes[-1][0] + 2, 0))
        targets.append(60.0)
    shapes += [(shapes[-1][0], 2), (shapes[-1][0], 4)]
    targets += [None, None]
    q, p, levels = build_chain(1 << 16, shapes, targets, log_scale=40, num_special=12)
    return CKKSParams(16, q, p, levels, log_scale=40, alpha=12, encryption_level=16,
                      hamming_weight=1 << 15, name="N16-boot")


def _normal(name, log_n, top, alpha, num_special, **kw) -> CKKSParams:
    shapes = [cheddar_shape(l) for l in range(top + 1)]
    q, p, levels = build_chain(1 << log_n, shapes, [None] * top, log_scale=40, num_special=num_special)
    return CKKSParams(log_n, q, p, levels, log_scale=40, alpha=alpha, name=name, **kw)


@functools.cache
def ckks_n15() -> CKKSParams:
    """N = 2^15, 13 levels of 2^40 (23 ciphertext limbs, alpha = 6, dnum = 4), uniform ternary
    secret, log2(PQ) ~ 856 <= 881."""
    return _normal("N15-L13", 15, 13, alpha=6, num_special=6)


@functools.cache
def toy_n12() -> CKKSParams:
    """INSECURE N = 2^12 test set with the same rational 40-bit plan: levels 0..6 (12 limbs),
    alpha = 4 (dnum = 3), uniform ternary secret."""
    return _normal("toy-N12", 12, 6, alpha=4, num_special=4, insecure=True)


@functools.cache
def toy_n11_single() -> CKKSParams:
    """INSECURE N = 2^11 test set with the classical one-prime-per-level chain: scale 2^30,
    level 0 = two ~25-bit primes, each level above adds one ~30-bit prime (levels 0..4),
    alpha = 2 (dnum = 3), Hamming-weight-64 secret."""
    shapes = [(l, 2) for l in range(5)]
    q, p, levels = build_chain(1 << 11, shapes, [None] * 4, log_scale=30, num_special=2)
    return CKKSParams(11, q, p, levels, log_scale=30, alpha=2, hamming_weight=64,
                      name="toy-N11-single", insecure=True)


@functools.cache
def toy_boot_n12() -> CKKSParams:
    """INSECURE N = 2^12 bootstrappable test set: the level layout of :func:`ckks_n16_boot`,
    shrunk so that CoeffToSlot, EvalMod and SlotToCoeff run on a CPU in seconds.

    33 ciphertext primes (29 mains, 4 terminals) + 9 special primes (alpha = 9, dnum = 4),
    scale 2^40, secret of Hamming weight N/2 = 2048 (dense; bootstrapping is meant to switch
    to a sparse ephemeral secret first, as with n16-boot). Levels, top down:

    ======  ==================  ========================================================
    level   rescale ratio       role
    ======  ==================  ========================================================
    18, 17  2^50 (terminal      CoeffToSlot phases 1-2 (18 -> 17 -> 16)
            pair)
    16      2^60 (main pair)    CoeffToSlot phase 3 (16 -> 15)
    15..8   2^58 (main pairs)   EvalMod: degree-30 polynomial (5 levels) + 3 double
                                angles (15 -> 7)
    7..5    2^40 (rational)     SlotToCoeff, 3 phases (7 -> 4); fresh encryptions at 7
    4..0    2^40 (rational)     left to the user after bootstrapping (4 multiplications)
    ======  ==================  ========================================================

    The 40-bit levels 0..7 follow Cheddar's 3-level cycle (:func:`cheddar_shape`); levels
    8..16 each add a pair of main primes and 17, 18 a pair of terminals, so the bootstrapping
    levels are nested (a level's primes contain those of every level below it down to 7).
    log2(PQ) ~ 1233: far above the 128-bit bound for N = 2^12 (109 bits)."""
    shapes = [cheddar_shape(l) for l in range(8)]
    targets = [None] * 7
    for _ in range(8):
        shapes.append((shapes[-1][0] + 2, 0))
        targets.append(57.9)
    shapes.append((shapes[-1][0] + 2, 0))
    targets.append(60.0)
    shapes += [(shapes[-1][0], 2), (shapes[-1][0], 4)]
    targets += [None, None]
    q, p, levels = build_chain(1 << 12, shapes, targets, log_scale=40, num_special=9)
    return CKKSParams(12, q, p, levels, log_scale=40, alpha=9, encryption_level=7,
                      hamming_weight=1 << 11, name="toy-boot-N12", insecure=True)


@functools.cache
def toy_n12_klss() -> CKKSParams:
    """INSECURE N = 2^12 test set for KLSS key switching: the chain of :func:`toy_n12` with
    one-prime digits (alpha = 1, dnum = 12) and one special prime, KLSS's own regime (the paper's
    r = 1: every prime not spent on P goes to Q), ``keyswitch="klss"`` with blocks of 4 rows."""
    return _normal("toy-N12-klss", 12, 6, alpha=1, num_special=1, insecure=True, keyswitch="klss",
                   keyswitch_options={"klss_block": 4})


@functools.cache
def cat_n15() -> CKKSParams:
    """CAT's parameters in 32-bit words (notes/cat.md §2.2: SEAL's BFVDefault(32768), N = 2^15,
    15 data primes of 55 bits and one of 56, log2(PQ) = 881): each 55/56-bit prime becomes a
    pair of ~27.5-bit primes, so 30 ciphertext primes in 15 levels of two (level l holds rows
    0..2l+1), 2 special primes, digits of alpha = 2 (SEAL's one-prime-per-digit decomposition),
    scale 2^40, uniform ternary secret, log2(PQ) <= 881. For benchmarks of key switching at the
    size CAT measured; each level's ratio is ~2^55, so the default scale grows towards 2^55 at
    the top."""
    n = 1 << 15
    primes = _nearest_primes(2.0 ** 27.5, n, 32, set())
    primes = sorted(primes)
    q, p = tuple(primes[:30]), tuple(primes[30:])
    levels = tuple(tuple(range(2 * l + 2)) for l in range(15))
    return CKKSParams(15, q, p, levels, log_scale=40, alpha=2, name="CAT-N15")


PRESETS = {
    "n16-boot": ckks_n16_boot,
    "n15": ckks_n15,
    "toy-n12": toy_n12,
    "toy-n11-single": toy_n11_single,
    "toy-boot-n12": toy_boot_n12,
    "toy-n12-klss": toy_n12_klss,
    "cat-n15": cat_n15,
}


def preset(name: str) -> CKKSParams:
    """A named parameter set: one of ``PRESETS`` (built on first use, then cached)."""
    try:
        return PRESETS[name]()
    except KeyError:
        raise ValueError(f"unknown CKKS preset {name!r}; choose one of {sorted(PRESETS)}") from None
