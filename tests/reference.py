"""Slow, obviously-correct references with Python integers (no numpy arithmetic).

They follow the mathematical definitions, not the kernels' algorithms:
  * NTT slot k of a limb with prime q = a(psi^(2 brev(k) + 1)) mod q;
  * negacyclic product = schoolbook convolution with X^N = -1;
  * base conversion = the CRT formula sum_j [x_j (Q/q_j)^-1]_{q_j} (Q/q_j) mod p;
  * automorphism = X^i -> X^(i g) with X^N = -1.
"""
from __future__ import annotations

import math


def bitrev(k: int, bits: int) -> int:
    return int(format(k, f"0{bits}b")[::-1], 2) if bits else 0


def ntt_slot(coeffs, k: int, q: int, psi: int) -> int:
    """Evaluation of the polynomial with coefficients ``coeffs`` at psi^(2 brev(k) + 1)."""
    n = len(coeffs)
    root = pow(psi, 2 * bitrev(k, n.bit_length() - 1) + 1, q)
    acc, power = 0, 1
    for c in coeffs:
        acc = (acc + int(c) * power) % q
        power = power * root % q
    return acc


def intt_coeff(evals, i: int, q: int, psi: int) -> int:
    """Coefficient i of the polynomial whose bit-reversed evaluations are ``evals``."""
    n = len(evals)
    bits = n.bit_length() - 1
    acc = 0
    for k, v in enumerate(evals):
        acc += int(v) * pow(psi, -(2 * bitrev(k, bits) + 1) * i, q)
    return acc * pow(n, -1, q) % q


def negacyclic_mul(a, b, q: int) -> list[int]:
    """Schoolbook a * b mod (X^N + 1, q). Skips zero coefficients of ``b`` (use a sparse b
    to keep it fast at large N)."""
    n = len(a)
    out = [0] * n
    nz = [(j, int(bj)) for j, bj in enumerate(b) if int(bj)]
    for i, ai in enumerate(a):
        ai = int(ai)
        if not ai:
            continue
        for j, bj in nz:
            k = i + j
            if k < n:
                out[k] += ai * bj
            else:
                out[k - n] -= ai * bj
    return [v % q for v in out]


def bconv(x_limbs, src, dst) -> list[list[int]]:
    """CRT fast base conversion of residues ``x_limbs[j][c]`` (mod src[j]) to basis ``dst``."""
    big_q = math.prod(src)
    n = len(x_limbs[0])
    out = []
    for p in dst:
        row = []
        for c in range(n):
            acc = 0
            for j, q in enumerate(src):
                qhat = big_q // q
                acc += (int(x_limbs[j][c]) * pow(qhat, -1, q) % q) * qhat
            row.append(acc % p)
        out.append(row)
    return out


def crt(residues, moduli) -> int:
    """The integer in [0, prod(moduli)) with the given residues."""
    big_q = math.prod(moduli)
    acc = 0
    for r, q in zip(residues, moduli):
        qhat = big_q // q
        acc += int(r) * pow(qhat, -1, q) * qhat
    return acc % big_q


def automorphism_coeff(coeffs, g: int, q: int) -> list[int]:
    """a(X) -> a(X^g) mod (X^N + 1, q)."""
    n = len(coeffs)
    out = [0] * n
    for i, c in enumerate(coeffs):
        e = i * g % (2 * n)
        if e < n:
            out[e] = (out[e] + int(c)) % q
        else:
            out[e - n] = (out[e - n] - int(c)) % q
    return out


def chacha20_block(key_words, counter: int, nonce_words) -> list[int]:
    """RFC 8439 section 2.3: the 16 output words of one ChaCha20 block (Python integers)."""
    mask = (1 << 32) - 1

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & mask

    state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574, *key_words, counter, *nonce_words]
    x = list(state)

    def quarter(a, b, c, d):
        x[a] = (x[a] + x[b]) & mask
        x[d] = rotl(x[d] ^ x[a], 16)
        x[c] = (x[c] + x[d]) & mask
        x[b] = rotl(x[b] ^ x[c], 12)
        x[a] = (x[a] + x[b]) & mask
        x[d] = rotl(x[d] ^ x[a], 8)
        x[c] = (x[c] + x[d]) & mask
        x[b] = rotl(x[b] ^ x[c], 7)

    for _ in range(10):
        quarter(0, 4, 8, 12), quarter(1, 5, 9, 13), quarter(2, 6, 10, 14), quarter(3, 7, 11, 15)
        quarter(0, 5, 10, 15), quarter(1, 6, 11, 12), quarter(2, 7, 8, 13), quarter(3, 4, 9, 14)
    return [(a + b) & mask for a, b in zip(x, state)]


def sample_small(key_words, count: int, thresholds, bound: int, stream: int) -> list[int]:
    """``count`` values of the device sampler: value j from the 64-bit keystream word j of
    ChaCha20(key, nonce (stream, 0, 0)) (little-endian word pairs), u = word >> 11, value =
    #{t in thresholds : t <= u} - bound."""
    out = []
    for block in range((count + 7) // 8):
        words = chacha20_block(key_words, block, (stream, 0, 0))
        for w in range(8):
            if len(out) == count:
                break
            u = ((words[2 * w + 1] << 32) | words[2 * w]) >> 11
            out.append(sum(1 for t in thresholds if t <= u) - bound)
    return out


def sample_uniform(key_words, moduli, batch: int, n: int, stream: int) -> list[int]:
    """``batch`` x len(moduli) x n residues of the device's uniform sampler, flattened: value j
    is the 64-bit keystream word j of ChaCha20(key, nonce (stream, 0, 0)) mod the prime of its
    limb (j // n) % len(moduli)."""
    out, count = [], batch * len(moduli) * n
    for block in range((count + 7) // 8):
        words = chacha20_block(key_words, block, (stream, 0, 0))
        for w in range(8):
            j = len(out)
            if j == count:
                break
            out.append(((words[2 * w + 1] << 32) | words[2 * w]) % moduli[(j // n) % len(moduli)])
    return out
