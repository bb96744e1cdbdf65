// Base conversion on the CPU (reference semantics for the CUDA kernel).
#include <vector>

#include "bconv_args.h"
#include "common.h"
#include "modarith.h"
#include "parallel.h"

namespace jax_fhe {

namespace {

ffi::Error BconvCpuImpl(ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::U32> in_consts,
                        ffi::Buffer<ffi::U32> mat, ffi::Buffer<ffi::U32> out_consts,
                        ffi::ResultBuffer<ffi::U32> y, int64_t fold_every) {
  BconvShape s;
  if (auto e = check_bconv_args(x.dimensions(), in_consts.dimensions(), mat.dimensions(),
                                out_consts.dimensions(), y->dimensions(), fold_every, &s);
      e.failure())
    return e;
  const int64_t n = s.in.n, lin = s.lin, lout = s.lout;
  const uint32_t* q = in_consts.typed_data();
  const uint32_t* pre = q + lin;
  const uint32_t* pre_s = q + 2 * lin;
  const uint32_t* oc = out_consts.typed_data();
  const uint32_t* T = mat.typed_data();
  constexpr int64_t kTile = 256;
  const int64_t tiles = (n + kTile - 1) / kTile;
  parallel_for(s.batch * tiles, kTile * lin * lout, [&](int64_t item) {
    const int64_t b = item / tiles, c0 = (item % tiles) * kTile;
    const int64_t cn = std::min(kTile, n - c0);
    const uint32_t* xb = x.typed_data() + b * lin * n;
    uint32_t* yb = y->typed_data() + b * lout * n;
    std::vector<uint32_t> yt(lin * kTile);
    for (int64_t j = 0; j < lin; ++j)
      for (int64_t c = 0; c < cn; ++c)
        yt[j * kTile + c] = mul_shoup(xb[j * n + c0 + c], pre[j], pre_s[j], q[j]);
    for (int64_t i = 0; i < lout; ++i) {
      const Reduce64 red{oc[i], oc[lout + i], oc[2 * lout + i], oc[3 * lout + i]};
      const uint32_t* Ti = T + i * lin;
      for (int64_t c = 0; c < cn; ++c) {
        uint64_t acc = 0;
        for (int64_t j = 0; j < lin; ++j) {
          acc += static_cast<uint64_t>(yt[j * kTile + c]) * Ti[j];
          if ((j + 1) % fold_every == 0 && j + 1 < lin) acc = reduce64(acc, red);
        }
        yb[i * n + c0 + c] = reduce64(acc, red);
      }
    }
  });
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(BconvCpu, BconvCpuImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()  // x [..., Lin, N]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // in_consts [3, Lin]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // mat [Lout, Lin]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // out_consts [4, Lout]
                                  .Ret<ffi::Buffer<ffi::U32>>()  // y [..., Lout, N]
                                  .Attr<int64_t>("fold_every"));

}  // namespace jax_fhe
