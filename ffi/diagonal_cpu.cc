// The giant-step sums of a BSGS linear transform on the CPU (semantics in diagonal_args.h); the
// reference for the CUDA kernel.
#include "common.h"
#include "diagonal_args.h"
#include "parallel.h"

namespace jax_fhe {

namespace {

ffi::Error DiagonalSumsCpuImpl(ffi::Buffer<ffi::U32> pts, ffi::RemainingArgs xs,
                               ffi::RemainingRets outs, ffi::Span<const int32_t> index,
                               ffi::Span<const int64_t> moduli) {
  DiagonalCall c;
  if (auto e = decode_diagonal_args(pts, xs, outs, index, moduli, &c); e.failure()) return e;
  const DiagonalShape& s = c.s;
  const int64_t n = s.n, m = n >> s.log_repeat, R = s.rows, K = s.baby;
  const uint32_t* w = pts.typed_data();
  parallel_for(s.giant * s.batch * 2 * R, n * K, [&](int64_t item) {
    const int64_t j = item % R, part = item / R % 2, b = item / (2 * R) % s.batch,
                  g = item / (2 * R * s.batch);
    const int32_t* idx = index.begin() + g * K;
    uint32_t* o = c.out[g] + ((b * 2 + part) * R + j) * n;
    for (int64_t t = 0; t < n; ++t)
      o[t] = diag_sum(K, c.rows[j], [&](int64_t i, uint32_t* wi, uint32_t* xi) {
        if (idx[i] < 0) return false;
        *wi = w[(idx[i] * R + j) * m + (t >> s.log_repeat)];
        *xi = c.x[i][(((s.x_batched[i] ? b : 0) * 2 + part) * R + j) * n + t];
        return true;
      });
  });
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(DiagonalSumsCpu, DiagonalSumsCpuImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()   // pts [D, R, N >> s]
                                  .RemainingArgs()                // x_i [B..., 2, R, N]
                                  .RemainingRets()                // out_g [B..., 2, R, N]
                                  .Attr<ffi::Span<const int32_t>>("index")
                                  .Attr<ffi::Span<const int64_t>>("moduli"));

}  // namespace jax_fhe
