// Argument checks shared by the CPU and CUDA automorphism handlers.
#pragma once

#include "common.h"

namespace jax_fhe {

inline ffi::Error check_automorphism_args(ffi::AnyBuffer::Dimensions x,
                                          ffi::AnyBuffer::Dimensions y, int64_t galois,
                                          PolyShape* s) {
  if (auto e = decode_poly_shape(x, "automorphism input", s); e.failure()) return e;
  if (galois <= 0 || galois >= 2 * s->n || (galois & 1) == 0)
    return ffi::Error::InvalidArgument("automorphism: galois element must be odd and in (0, 2N)");
  if (x.size() != y.size()) return ffi::Error::InvalidArgument("automorphism: output rank mismatch");
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i] != y[i]) return ffi::Error::InvalidArgument("automorphism: output shape mismatch");
  return ffi::Error::Success();
}

// The coefficient-domain map also needs the limbs' moduli and g^-1 mod 2N.
inline ffi::Error check_automorphism_coeff_args(const PolyShape& s,
                                                ffi::AnyBuffer::Dimensions moduli,
                                                int64_t galois, int64_t galois_inv) {
  if (auto e = expect_count(moduli, 1, s.limbs, "automorphism moduli"); e.failure()) return e;
  if (((galois * galois_inv) & (2 * s.n - 1)) != 1)
    return ffi::Error::InvalidArgument("automorphism: galois_inv is not the inverse of galois mod 2N");
  return ffi::Error::Success();
}

}  // namespace jax_fhe
