"""RNS arithmetic: NTT-friendly primes, contexts (twiddle tables), base-conversion and CRT tables,
the security bound, host-side randomness (secrets, the keys the device sampler expands, public
uniform data), the pytree
dataclass helper and the progress switch every layer uses."""
from .bconv import BConvTable, fold_interval, make_bconv_table
from .context import RNSContext, check_ring_degree, make_context
from .crt import (MAX_TERMS, CrtQuotient, ExactConv, MixedRadixConv, crt_centered, crt_centered_float,
                  make_crt_quotient, make_exact_conv, make_mixed_radix_conv)
from .primes import check_ntt_prime, is_prime, ntt_primes, primitive_root_of_unity
from .progress import progress_bar, slow_keygen
from .pytree import HostTable, host_u32, pytree_dataclass, static_field, tables_field
from .sampling import (SEED_BYTES, TERNARY, HostRandom, SeededUniform, SmallTable, as_host_random, gaussian_table,
                       record_uniform_seed, to_residues, uniform_residues, uniform_seed_of)
from .security import HE_STD_128_TERNARY, check_rlwe_security
from .shoup import device_u32

__all__ = [
    "BConvTable", "CrtQuotient", "ExactConv", "HE_STD_128_TERNARY", "HostRandom", "MAX_TERMS", "MixedRadixConv",
    "RNSContext", "as_host_random", "check_ntt_prime", "crt_centered", "crt_centered_float", "check_ring_degree", "check_rlwe_security",
    "device_u32", "fold_interval", "HostTable", "host_u32", "tables_field", "is_prime", "make_bconv_table", "make_context", "make_crt_quotient",
    "make_exact_conv", "make_mixed_radix_conv", "ntt_primes", "primitive_root_of_unity", "pytree_dataclass",
    "static_field", "to_residues", "SEED_BYTES", "SeededUniform", "record_uniform_seed", "uniform_residues",
    "uniform_seed_of", "progress_bar", "slow_keygen", "SmallTable", "TERNARY", "gaussian_table",
]
