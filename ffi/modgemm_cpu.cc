// Fused modular GEMM on the CPU (reference semantics for the CUDA kernel; see modgemm_args.h):
// exact 128-bit sums of H * R, one reduction per output.
#include "common.h"
#include "modgemm_args.h"
#include "parallel.h"

namespace jax_fhe {

namespace {

ffi::Error ModMatmulPlanesCpuImpl(ffi::Buffer<ffi::S8> lhs, ffi::Buffer<ffi::U32> rhs,
                                  ffi::Buffer<ffi::U32> moduli, ffi::ResultBuffer<ffi::U32> out) {
  ModGemmShape s;
  if (auto e = check_modgemm_args(lhs.dimensions(), rhs.dimensions(), moduli.dimensions(),
                                  out->dimensions(), &s);
      e.failure())
    return e;
  const uint32_t* q = moduli.typed_data();
  if (auto e = check_modgemm_moduli(q, s.batch, s.k); e.failure()) return e;
  const int8_t* L = lhs.typed_data();
  const uint32_t* R = rhs.typed_data();
  uint32_t* Y = out->typed_data();
  const int64_t m_rows = s.m, K = s.k, C = s.c;
  parallel_for(s.batch * m_rows, 4 * K * C, [&](int64_t item) {
    const int64_t b = item / m_rows, m = item % m_rows;
    const int8_t* planes = L + b * 4 * m_rows * K;
    const uint32_t* rb = R + b * C * K;  // transposed: [C, K]
    for (int64_t c = 0; c < C; ++c) {
      __int128 acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        int64_t h = 0;
        for (int a = 3; a >= 0; --a) h = h * 256 + planes[(a * m_rows + m) * K + k];
        acc += static_cast<__int128>(h) * rb[c * K + k];
      }
      __int128 r = acc % static_cast<__int128>(q[b]);
      if (r < 0) r += q[b];
      Y[(b * m_rows + m) * C + c] = static_cast<uint32_t>(r);
    }
  });
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(ModMatmulPlanesCpu, ModMatmulPlanesCpuImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::S8>>()   // lhs [..., 4M, K]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // rhs_t [..., C, K]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // moduli [...]
                                  .Ret<ffi::Buffer<ffi::U32>>());  // out [..., M, C]

}  // namespace jax_fhe
