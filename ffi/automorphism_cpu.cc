// Automorphism X -> X^g on the CPU, in the NTT (bit-reversed evaluation) domain and in the
// coefficient domain.
#include "common.h"
#include "modarith.h"
#include "parallel.h"

namespace jax_fhe {

namespace {

ffi::Error check_automorphism(const ffi::Buffer<ffi::U32>& x, ffi::ResultBuffer<ffi::U32>& y,
                              int64_t galois, PolyShape* s) {
  if (auto e = decode_poly_shape(x.dimensions(), "automorphism input", s); e.failure()) return e;
  if (galois <= 0 || galois >= 2 * s->n || (galois & 1) == 0)
    return ffi::Error::InvalidArgument("automorphism: galois element must be odd and in (0, 2N)");
  auto xd = x.dimensions(), yd = y->dimensions();
  if (xd.size() != yd.size()) return ffi::Error::InvalidArgument("automorphism: output rank mismatch");
  for (size_t i = 0; i < xd.size(); ++i)
    if (xd[i] != yd[i]) return ffi::Error::InvalidArgument("automorphism: output shape mismatch");
  return ffi::Error::Success();
}

ffi::Error AutomorphismNttCpuImpl(ffi::Buffer<ffi::U32> x, ffi::ResultBuffer<ffi::U32> y,
                                  int64_t galois) {
  PolyShape s;
  if (auto e = check_automorphism(x, y, galois, &s); e.failure()) return e;
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

// out[k] = +-in[k * g^-1 mod 2N]; the sign flips when the source index wraps past N.
ffi::Error AutomorphismCoeffCpuImpl(ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::U32> moduli,
                                    ffi::ResultBuffer<ffi::U32> y, int64_t galois,
                                    int64_t galois_inv) {
  PolyShape s;
  if (auto e = check_automorphism(x, y, galois, &s); e.failure()) return e;
  if (auto e = expect_count(moduli.dimensions(), 1, s.limbs, "automorphism moduli"); e.failure())
    return e;
  if (((galois * galois_inv) & (2 * s.n - 1)) != 1)
    return ffi::Error::InvalidArgument("automorphism: galois_inv is not the inverse of galois mod 2N");
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

XLA_FFI_DEFINE_HANDLER_SYMBOL(AutomorphismCoeffCpu, AutomorphismCoeffCpuImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()  // moduli [L]
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<int64_t>("galois")
                                  .Attr<int64_t>("galois_inv"));

}  // namespace jax_fhe
