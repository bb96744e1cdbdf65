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

// The accumulating NTT-domain automorphism (jax_fhe_automorphism_ntt_add): x [E..., C, L, N]
// (C >= 1 polynomials per entry, e.g. a key switch's (u0, u1)), G Galois elements (attribute
// galois: int64[G], G <= 16, G dividing the E entries), add [Ba..., L, N] with Ba one entry or
// E / G entries, moduli [L]. Entry e = a * G + g:
//   y[e, 0, l] = sigma_g(x[e, 0, l] + add[a, l])     (mod q_l; add's single entry for every a)
//   y[e, c, l] = sigma_g(x[e, c, l])                  (c > 0)
// i.e. sigma((x0 + add, x1, ...)): a rotation's c0 + u0 without a separate add, for G rotations
// of one ciphertext (hoisted baby steps) in one launch.
constexpr int kMaxAutomorphismGalois = 16;

struct AutomorphismAddShape {
  PolyShape s;
  int64_t comps = 0, batch = 0, count = 1;  // batch: E entries; count: G
  bool add_batched = false;
  uint32_t galois[kMaxAutomorphismGalois] = {};
};

inline ffi::Error check_automorphism_add_args(ffi::AnyBuffer::Dimensions x, ffi::AnyBuffer::Dimensions add,
                                              ffi::AnyBuffer::Dimensions moduli, ffi::AnyBuffer::Dimensions y,
                                              ffi::Span<const int64_t> galois, AutomorphismAddShape* a) {
  if (galois.size() < 1 || galois.size() > static_cast<size_t>(kMaxAutomorphismGalois))
    return ffi::Error::InvalidArgument("automorphism_add: 1 to 16 galois elements");
  for (size_t g = 0; g < galois.size(); ++g) {
    if (auto e = check_automorphism_args(x, y, galois[g], &a->s); e.failure()) return e;
    a->galois[g] = static_cast<uint32_t>(galois[g]);
  }
  a->count = static_cast<int64_t>(galois.size());
  if (x.size() < 3) return ffi::Error::InvalidArgument("automorphism_add: x must be [E..., C, L, N]");
  a->comps = x[x.size() - 3];
  a->batch = a->comps > 0 && a->s.limbs > 0 ? a->s.polys / (a->comps * a->s.limbs) : 0;
  if (a->batch % a->count != 0)
    return ffi::Error::InvalidArgument("automorphism_add: the galois elements must divide x's entries");
  PolyShape as;
  if (auto e = decode_poly_shape(add, "automorphism_add add", &as); e.failure()) return e;
  if (as.n != a->s.n || as.limbs != a->s.limbs)
    return ffi::Error::InvalidArgument("automorphism_add: add must be [B..., L, N] with x's L and N");
  const int64_t ab = as.polys / (as.limbs > 0 ? as.limbs : 1), per = a->batch / a->count;
  if (ab != 1 && ab != per)
    return ffi::Error::InvalidArgument("automorphism_add: add has " + std::to_string(ab) +
                                       " batch entries, x " + std::to_string(per) + " per galois element");
  a->add_batched = ab == per && per > 1;
  return expect_count(moduli, 1, a->s.limbs, "automorphism_add moduli");
}

}  // namespace jax_fhe
