"""CKKS parameter sets: prime chains, the level plan, the scale table, security checks."""
import math
import time
from fractions import Fraction

import pytest

from jax_fhe import ckks
from jax_fhe.rns import is_prime


def _check_chain(p: ckks.CKKSParams):
    n = p.n
    for q in p.all_primes:
        assert is_prime(q) and q < 2**31 and (q - 1) % (2 * n) == 0
    assert len(set(p.all_primes)) == len(p.all_primes)
    for l in range(1, p.max_level + 1):
        # rescaling drops D and adds R: the modulus ratio is exactly prod(D) / prod(R)
        assert Fraction(p.modulus(l), p.modulus(l - 1)) == p.ratio(l)
        assert set(p.rows(l - 1)) == (set(p.rows(l)) - set(p.dropped(l))) | set(p.added(l))
        # the default scales satisfy s_l^2 / rho_l = s_{l-1} (exact landing of products)
        assert 2 * p.log_scales[l] - math.log2(p.ratio(l)) == pytest.approx(p.log_scales[l - 1], abs=1e-9)


@pytest.mark.parametrize("name", ["toy-n12", "toy-n11-single", "n15", "toy-boot-n12", "toy-n12-klss", "cat-n15"])
def test_presets_are_consistent(name):
    p = ckks.preset(name)
    _check_chain(p)
    assert p.log_scales[0] == p.log_scale
    assert p.log_pq <= ckks.HE_STD_128_TERNARY[p.log_n] or p.insecure
    assert ("INSECURE" in repr(p)) == p.insecure
    assert p.describe().count("\n") == p.max_level + 2


def test_plain_chain_is_one_prime_per_level():
    p = ckks.toy_n11_single()
    for l in range(1, p.max_level + 1):
        assert len(p.dropped(l)) == 1 and not p.added(l)
        assert abs(p.log_scales[l] - 30) < 0.01


def test_rational_plan_keeps_scale_near_2_40():
    p = ckks.ckks_n15()
    kinds = set()
    for l in range(1, p.max_level + 1):
        kinds.add((len(p.dropped(l)), len(p.added(l))))
        assert abs(p.log_scales[l] - 40) < 0.1  # measured: within 0.066 bit
    assert kinds == {(3, 2), (4, 2)}  # both kinds of rational rescale occur
    assert not p.is_subset(1, 2) and not p.is_subset(2, 3)  # levels are not nested
    assert p.log_pq <= 881 and p.dnum == 4


def test_cat_chain_is_seal_bfv_default_in_pairs():
    """cat-n15: SEAL's BFVDefault(32768) chain (CAT's benchmark set, 15 x 55 + 56 = 881 bits) with
    every 55/56-bit prime as a pair of ~27.5-bit primes; digits of one pair."""
    p = ckks.preset("cat-n15")
    assert p.n == 1 << 15 and (p.num_q, len(p.p_primes), p.alpha, p.dnum, p.max_level) == (30, 2, 2, 15, 14)
    assert 875 < p.log_pq <= 881 and not p.insecure
    for l in range(1, p.max_level + 1):
        assert p.dropped(l) == (2 * l, 2 * l + 1) and not p.added(l)
        assert 54 < math.log2(p.ratio(l)) < 56


def test_toy_boot_layout():
    p = ckks.preset("toy-boot-n12")
    assert p.insecure and p.n == 1 << 12 and p.max_level == 18 and p.default_level == 7
    assert p.hamming_weight == 1 << 11 and p.alpha == 9 and p.dnum == 4
    for l in range(1, 8):  # user and SlotToCoeff levels: 40-bit rational rescales
        assert abs(math.log2(p.ratio(l)) - 40) < 0.05 and abs(p.log_scales[l] - 40) < 0.05
    for l in range(8, 19):  # EvalMod and CoeffToSlot levels: drop a pair, nested
        assert len(p.dropped(l)) == 2 and not p.added(l) and p.is_subset(l - 1, l)
    assert all(abs(math.log2(p.ratio(l)) - 57.9) < 0.05 for l in range(8, 16))
    assert abs(math.log2(p.ratio(16)) - 60) < 0.05
    assert all(abs(math.log2(p.ratio(l)) - 50) < 0.1 for l in (17, 18))


def test_n16_boot_set_matches_theodosian_table_1():
    t0 = time.perf_counter()
    p = ckks.ckks_n16_boot()
    assert time.perf_counter() - t0 < 20  # measured ~1 s on this 2-core machine (prime search)
    _check_chain(p)
    assert p.n == 1 << 16 and p.log_scale == 40
    assert len(p.rows(p.max_level)) == 47 <= 48 and len(p.p_primes) == 12 and p.alpha == 12
    assert p.dnum == 4 and p.hamming_weight == 1 << 15
    assert p.log_pq <= 1746  # Table I bound (measured 1744.2); HE standard: 1772
    assert all(abs(p.log_scales[l] - 40) < 0.15 for l in range(p.default_level + 1))
    assert p.default_level == 16  # 40-bit levels 0..16 for the user; 17..28 for bootstrapping
    ratios = [math.log2(p.ratio(l)) for l in range(17, 29)]
    assert all(abs(r - 57.9) < 0.1 for r in ratios[:8]) and all(abs(r - 60) < 0.1 for r in ratios[8:10])


def test_security_check_rejects_large_sets():
    p = ckks.toy_n12()
    fields = dict(log_n=p.log_n, q_primes=p.q_primes, p_primes=p.p_primes, levels=p.levels,
                  alpha=p.alpha)
    with pytest.raises(ValueError, match="HE-standard 128-bit bound"):
        ckks.CKKSParams(**fields)
    assert ckks.CKKSParams(**fields, insecure=True).insecure


@pytest.mark.parametrize("change, msg", [
    (dict(q_primes=(7, 11)), "out of range|not NTT-friendly|not prime"),
    (dict(levels=((0, 1), (0, 1))), "drops no prime"),
    (dict(levels=((1, 0),)), "sorted"),
    (dict(levels=((0, 99),)), "outside q_primes"),
    (dict(alpha=0), "alpha"),
    (dict(p_primes=()), "special prime"),
    (dict(encryption_level=9), "encryption_level"),
    (dict(hamming_weight=0), "hamming_weight"),
])
def test_bad_parameters_raise(change, msg):
    p = ckks.toy_n12()
    fields = dict(log_n=p.log_n, q_primes=p.q_primes, p_primes=p.p_primes, levels=p.levels,
                  alpha=p.alpha, insecure=True)
    fields.update(change)
    with pytest.raises(ValueError, match=msg):
        ckks.CKKSParams(**fields)


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown CKKS preset"):
        ckks.preset("nope")
