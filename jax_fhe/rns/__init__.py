"""RNS arithmetic: NTT-friendly primes, contexts (twiddle tables), base-conversion tables and
host-side sampling (secrets, noise, public uniform data)."""
from .bconv import BConvTable, fold_interval, make_bconv_table
from .context import RNSContext, check_ring_degree, make_context
from .primes import check_ntt_prime, is_prime, ntt_primes, primitive_root_of_unity
from .sampling import HostRandom, to_residues

__all__ = [
    "BConvTable", "HostRandom", "RNSContext", "check_ntt_prime", "check_ring_degree", "fold_interval",
    "is_prime", "make_bconv_table", "make_context", "ntt_primes", "primitive_root_of_unity", "to_residues",
]
