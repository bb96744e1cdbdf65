// Automorphism X -> X^g on the CPU, in the NTT (bit-reversed evaluation) domain and in the
// coefficient domain.
#include <vector>

#include "automorphism_args.h"
#include "common.h"
#include "modarith.h"
#include "parallel.h"

namespace jax_fhe {

namespace {

ffi::Error AutomorphismNttCpuImpl(ffi::Buffer<ffi::U32> x, ffi::ResultBuffer<ffi::U32> y,
                                  int64_t galois) {
  PolyShape s;
  if (auto e = check_automorphism_args(x.dimensions(), y->dimensions(), galois, &s);
      e.failure())
    return e;
  std::vector<uint32_t> src(s.n);
  for (int64_t k = 0; k < s.n; ++k)
    src[k] = automorphism_ntt_source(static_cast<uint32_t>(k), static_cast<uint32_t>(galois), s.log_n);
  const uint32_t* in = x.typed_data();
  uint32_t* out = y->typed_data();
  parallel_for(s.polys, s.n, [&](int64_t p) {
    for (int64_t k = 0; k < s.n; ++k) out[p * s.n + k] = in[p * s.n + src[k]];
  });
  return ffi::Error::Success();
}

ffi::Error AutomorphismNttAddCpuImpl(ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::U32> add,
                                     ffi::Buffer<ffi::U32> moduli, ffi::ResultBuffer<ffi::U32> y, int64_t galois) {
  AutomorphismAddShape a;
  if (auto e = check_automorphism_add_args(x.dimensions(), add.dimensions(), moduli.dimensions(),
                                           y->dimensions(), galois, &a);
      e.failure())
    return e;
  const int64_t n = a.s.n, limbs = a.s.limbs;
  std::vector<uint32_t> src(n);
  for (int64_t k = 0; k < n; ++k)
    src[k] = automorphism_ntt_source(static_cast<uint32_t>(k), static_cast<uint32_t>(galois), a.s.log_n);
  const uint32_t* in = x.typed_data();
  const uint32_t* ad = add.typed_data();
  const uint32_t* q = moduli.typed_data();
  uint32_t* out = y->typed_data();
  parallel_for(a.s.polys, n, [&](int64_t p) {
    const int64_t cb = p / limbs, l = p % limbs;
    const uint32_t* xp = in + p * n;
    uint32_t* yp = out + p * n;
    if (cb % a.comps != 0) {
      for (int64_t k = 0; k < n; ++k) yp[k] = xp[src[k]];
      return;
    }
    const uint32_t* ap = ad + ((a.add_batched ? cb / a.comps : 0) * limbs + l) * n;
    for (int64_t k = 0; k < n; ++k) yp[k] = add_mod(xp[src[k]], ap[src[k]], q[l]);
  });
  return ffi::Error::Success();
}

// out[k] = +-in[k * g^-1 mod 2N]; the sign flips when the source index wraps past N.
ffi::Error AutomorphismCoeffCpuImpl(ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::U32> moduli,
                                    ffi::ResultBuffer<ffi::U32> y, int64_t galois,
                                    int64_t galois_inv) {
  PolyShape s;
  if (auto e = check_automorphism_args(x.dimensions(), y->dimensions(), galois, &s);
      e.failure())
    return e;
  if (auto e = check_automorphism_coeff_args(s, moduli.dimensions(), galois, galois_inv); e.failure())
    return e;
  const uint32_t* in = x.typed_data();
  uint32_t* out = y->typed_data();
  const uint32_t* q = moduli.typed_data();
  parallel_for(s.polys, s.n, [&](int64_t p) {
    const uint32_t qi = q[p % s.limbs];
    for (int64_t k = 0; k < s.n; ++k) {
      const int64_t i = (k * galois_inv) & (2 * s.n - 1);
      const uint32_t v = in[p * s.n + (i & (s.n - 1))];
      out[p * s.n + k] = (i < s.n) ? v : sub_mod(0, v, qi);
    }
  });
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(AutomorphismNttCpu, AutomorphismNttCpuImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<int64_t>("galois"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(AutomorphismNttAddCpu, AutomorphismNttAddCpuImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()  // x [E..., C, L, N]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // add [E..., L, N] or [L, N]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // moduli [L]
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<int64_t>("galois"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(AutomorphismCoeffCpu, AutomorphismCoeffCpuImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()  // moduli [L]
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<int64_t>("galois")
                                  .Attr<int64_t>("galois_inv"));

}  // namespace jax_fhe
