"""The 128-bit security bound of the Homomorphic Encryption Standard, checked by every RLWE
parameter set (CKKS, BFV, BGV, the PIR ring) at construction."""
from __future__ import annotations

#: HE Standard (2018), 128-bit classical security, ternary secret: max log2(PQ) per log2(N).
HE_STD_128_TERNARY = {10: 27, 11: 54, 12: 109, 13: 218, 14: 438, 15: 881, 16: 1772}


def check_rlwe_security(log_n: int, log_pq: float, *, insecure: bool, name: str) -> None:
    """Raise ValueError unless log2(PQ) is within the 128-bit bound for N = 2^log_n (ternary
    secrets), or the set is explicitly marked ``insecure`` (test-only)."""
    bound = HE_STD_128_TERNARY.get(int(log_n))
    if bound is None:
        raise ValueError(f"{name}: no 128-bit bound is tabulated for N = 2^{log_n} "
                         f"(known: 2^{min(HE_STD_128_TERNARY)}..2^{max(HE_STD_128_TERNARY)})")
    if log_pq > bound and not insecure:
        raise ValueError(
            f"{name}: log2(PQ) = {log_pq:.1f} exceeds the HE-standard 128-bit bound {bound} for "
            f"N = 2^{log_n} with ternary secrets; pass insecure=True for a test-only set")
