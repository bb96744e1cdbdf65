// Argument checks shared by the CPU and CUDA automorphism handlers.
#pragma once

#include <string>

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

// The NTT-domain automorphism that adds to component 0 first (jax_fhe_automorphism_ntt_add):
// x [E..., C, L, N] (C >= 1 polynomials per entry, e.g. a key switch's (u0, u1)), add
// [Ea..., L, N] with one entry or E, moduli [L]:
//   y[e, 0, l] = sigma(x[e, 0, l] + add[e or 0, l])  (mod q_l)
//   y[e, c, l] = sigma(x[e, c, l])                     (c > 0)
// i.e. sigma((c0 + u0, u1)) of a rotation without writing c0 + u0 first.
struct AutomorphismAddShape {
  PolyShape s;
  int64_t comps = 0, entries = 0;
  bool add_batched = false;
};

inline ffi::Error check_automorphism_add_args(ffi::AnyBuffer::Dimensions x, ffi::AnyBuffer::Dimensions add,
                                              ffi::AnyBuffer::Dimensions moduli, ffi::AnyBuffer::Dimensions y,
                                              int64_t galois, AutomorphismAddShape* a) {
  if (auto e = check_automorphism_args(x, y, galois, &a->s); e.failure()) return e;
  if (x.size() < 3) return ffi::Error::InvalidArgument("automorphism_add: x must be [E..., C, L, N]");
  a->comps = x[x.size() - 3];
  a->entries = a->comps > 0 && a->s.limbs > 0 ? a->s.polys / (a->comps * a->s.limbs) : 0;
  PolyShape as;
  if (auto e = decode_poly_shape(add, "automorphism_add add", &as); e.failure()) return e;
  if (as.n != a->s.n || as.limbs != a->s.limbs)
    return ffi::Error::InvalidArgument("automorphism_add: add must be [E..., L, N] with x's L and N");
  const int64_t ae = as.limbs > 0 ? as.polys / as.limbs : 0;
  if (ae != 1 && ae != a->entries)
    return ffi::Error::InvalidArgument("automorphism_add: add has " + std::to_string(ae) + " entries, x " +
                                       std::to_string(a->entries));
  a->add_batched = ae == a->entries && ae > 1;
  return expect_count(moduli, 1, a->s.limbs, "automorphism_add moduli");
}

}  // namespace jax_fhe
