"""RNS arithmetic: NTT-friendly primes, contexts (twiddle tables) and base-conversion tables."""
from .bconv import BConvTable, fold_interval, make_bconv_table
from .context import RNSContext, check_ring_degree, make_context
from .primes import check_ntt_prime, is_prime, ntt_primes, primitive_root_of_unity

__all__ = [
    "BConvTable", "RNSContext", "check_ntt_prime", "check_ring_degree", "fold_interval",
    "is_prime", "make_bconv_table", "make_context", "ntt_primes", "primitive_root_of_unity",
]
