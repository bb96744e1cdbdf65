"""Prime generation and RNS context construction (host-side, exact integers)."""
import math

import numpy as np
import pytest

from jax_fhe import rns


def _trial_division(n):
    return n >= 2 and all(n % d for d in range(2, math.isqrt(n) + 1))


def test_is_prime_matches_trial_division():
    for n in range(0, 5000):
        assert rns.is_prime(n) == _trial_division(n), n


def test_is_prime_hard_cases():
    assert rns.is_prime(2**31 - 1)
    assert rns.is_prime(2**61 - 1)
    # strong pseudoprimes to small bases and Carmichael numbers are composite
    for c in (561, 1105, 3215031751, 2152302898747, 3474749660383, 341550071728321,
              3825123056546413051, (2**31 - 1) * (2**31 - 19)):
        assert not rns.is_prime(c), c


@pytest.mark.parametrize("log_n", range(10, 17))
@pytest.mark.parametrize("bits", [24, 28, 30, 31])
def test_ntt_primes_are_ntt_friendly(log_n, bits):
    n = 1 << log_n
    ps = rns.ntt_primes(bits, 3, n)
    assert len(set(ps)) == 3
    for q in ps:
        assert rns.is_prime(q) and q.bit_length() == bits and q % (2 * n) == 1
        rns.check_ntt_prime(q, n)  # does not raise


def test_ntt_primes_extra_congruence_and_exclusion():
    ps = rns.ntt_primes(29, 3, 4096, congruent_to=1 << 18)
    assert all(q % (1 << 18) == 1 and q < 2**29 for q in ps)
    more = rns.ntt_primes(29, 2, 4096, congruent_to=1 << 18, exclude=ps)
    assert not set(more) & set(ps)
    up = rns.ntt_primes(30, 2, 1024, descending=False)
    assert all(2**29 < q < 2**29 + 2**24 for q in up)


def test_primitive_root_has_exact_order():
    q = rns.ntt_primes(30, 1, 1 << 16)[0]
    w = rns.primitive_root_of_unity(1 << 17, q)
    assert pow(w, 1 << 17, q) == 1 and pow(w, 1 << 16, q) == q - 1


@pytest.mark.parametrize("bad, match", [
    (2**31 + 11, r"below 2\^31"),
    (4095 * 2048 + 1, "not prime"),   # = 1 mod 2N but composite
    (1000003, "not NTT-friendly"),   # prime, != 1 mod 2N
])
def test_bad_primes_are_rejected(bad, match):
    with pytest.raises(ValueError, match=match):
        rns.check_ntt_prime(bad, 1024)
    with pytest.raises(ValueError, match=match):
        rns.make_context([bad], 1024)


def test_context_construction_errors():
    q = rns.ntt_primes(30, 2, 1024)
    with pytest.raises(ValueError, match="distinct"):
        rns.make_context([q[0], q[0]], 1024)
    with pytest.raises(ValueError, match="power of two"):
        rns.make_context(q, 1000)
    with pytest.raises(ValueError, match="out of range"):
        rns.make_context(q, 512)
    with pytest.raises(ValueError, match="out of range"):
        rns.make_context(q, 1 << 17)
    with pytest.raises(ValueError, match="at most 31"):
        rns.ntt_primes(32, 1, 1024)
    with pytest.raises(ValueError, match="only"):
        rns.ntt_primes(12, 5, 1024)


def test_context_tables_are_consistent():
    n = 1024
    ps = rns.ntt_primes(31, 2, n)
    ctx = rns.make_context(ps, n)
    assert ctx.primes == ps and ctx.n == n and "N=1024" in repr(ctx)
    psi = np.asarray(ctx.psi, dtype=np.uint64)
    ipsi = np.asarray(ctx.ipsi, dtype=np.uint64)
    for t, q in enumerate(ps):
        assert np.all((psi[t] * ipsi[t]) % q == 1)
        assert int(ctx.psi_shoup[t, 5]) == (int(ctx.psi[t, 5]) << 32) // q
        assert int(ctx.n_inv[t]) * n % q == 1
        assert (int(ctx.neg_qinv[t]) * q) % 2**32 == 2**32 - 1
