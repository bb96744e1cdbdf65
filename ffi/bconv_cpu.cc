// Base conversion on the CPU (reference semantics for the CUDA kernels; formulas in
// bconv_args.h): the plain fast conversion and the centered one, which also sums the
// fixed-point fractions of the pre-multiplied inputs and subtracts k Q before the single store.
#include <vector>

#include "bconv_args.h"
#include "common.h"
#include "modarith.h"
#include "parallel.h"

namespace jax_fhe {

namespace {

// The centered conversion's extra inputs; null for the plain conversion.
struct Centering {
  const uint32_t* inv_fix;   // [Lin]
  const uint32_t* src_prod;  // [Lout]
  int fix_bits;
};

void bconv_cpu(const BconvShape& s, const uint32_t* x, const uint32_t* in_consts,
               const uint32_t* T, const uint32_t* oc, uint32_t* y, int64_t fold_every,
               const Centering* cen) {
  const int64_t n = s.in.n, lin = s.lin, lout = s.lout;
  const uint32_t* q = in_consts;
  const uint32_t* pre = q + lin;
  const uint32_t* pre_s = q + 2 * lin;
  constexpr int64_t kTile = 256;
  const int64_t tiles = (n + kTile - 1) / kTile;
  parallel_for(s.batch * tiles, kTile * lin * lout, [&](int64_t item) {
    const int64_t b = item / tiles, c0 = (item % tiles) * kTile;
    const int64_t cn = std::min(kTile, n - c0);
    const uint32_t* xb = x + b * s.in_stride() + static_cast<int64_t>(s.dg.start[0]) * n;
    uint32_t* yb = y + b * s.out_stride();
    std::vector<uint32_t> yt(lin * kTile), kt(kTile, 0u);
    for (int64_t j = 0; j < lin; ++j)
      for (int64_t c = 0; c < cn; ++c) {
        const uint32_t v = mul_shoup(xb[j * n + c0 + c], pre[j], pre_s[j], q[j]);
        yt[j * kTile + c] = v;
        if (cen) kt[c] += mulhi32(v, cen->inv_fix[j]);  // wraps like crt.rounded_quotient's sum
      }
    if (cen)
      for (int64_t c = 0; c < cn; ++c) kt[c] = (kt[c] + (1u << (cen->fix_bits - 1))) >> cen->fix_bits;
    for (int64_t i = 0; i < lout; ++i) {
      const Reduce64 red{oc[i], oc[lout + i], oc[2 * lout + i], oc[3 * lout + i]};
      const uint32_t* Ti = T + i * lin;
      for (int64_t c = 0; c < cn; ++c) {
        uint64_t acc = 0;
        for (int64_t j = 0; j < lin; ++j) {
          acc += static_cast<uint64_t>(yt[j * kTile + c]) * Ti[j];
          if ((j + 1) % fold_every == 0 && j + 1 < lin) acc = reduce64(acc, red);
        }
        uint32_t out = reduce64(acc, red);
        if (cen)
          out = sub_mod(out, reduce64(static_cast<uint64_t>(kt[c]) * cen->src_prod[i], red), red.p);
        yb[i * n + c0 + c] = out;
      }
    }
  });
}

ffi::Error BconvCpuImpl(ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::U32> in_consts,
                        ffi::Buffer<ffi::U32> mat, ffi::Buffer<ffi::U32> out_consts,
                        ffi::ResultBuffer<ffi::U32> y, int64_t fold_every) {
  BconvShape s;
  if (auto e = check_bconv_args(x.dimensions(), in_consts.dimensions(), mat.dimensions(),
                                out_consts.dimensions(), y->dimensions(), fold_every, &s);
      e.failure())
    return e;
  bconv_cpu(s, x.typed_data(), in_consts.typed_data(), mat.typed_data(), out_consts.typed_data(),
            y->typed_data(), fold_every, nullptr);
  return ffi::Error::Success();
}

ffi::Error BconvCenteredCpuImpl(ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::U32> in_consts,
                                ffi::Buffer<ffi::U32> mat, ffi::Buffer<ffi::U32> out_consts,
                                ffi::Buffer<ffi::U32> inv_fix, ffi::Buffer<ffi::U32> src_prod,
                                ffi::ResultBuffer<ffi::U32> y, int64_t fold_every,
                                ffi::Span<const int64_t> starts, ffi::Span<const int64_t> fix_bits) {
  BconvShape s;
  if (auto e = check_bconv_centered_args(x.dimensions(), in_consts.dimensions(), mat.dimensions(),
                                         out_consts.dimensions(), inv_fix.dimensions(),
                                         src_prod.dimensions(), y->dimensions(), fold_every,
                                         starts, fix_bits, &s);
      e.failure())
    return e;
  // conversion d: its tables, input limbs from starts[d], output limbs from d Lout
  for (int64_t d = 0; d < s.digits; ++d) {
    BconvShape sd = s;
    sd.dg.start[0] = s.dg.start[d];
    const Centering cen{inv_fix.typed_data() + d * s.lin, src_prod.typed_data() + d * s.lout,
                        s.dg.fix_bits[d]};
    bconv_cpu(sd, x.typed_data(), in_consts.typed_data() + d * 3 * s.lin,
              mat.typed_data() + d * s.lout * s.lin, out_consts.typed_data() + d * 4 * s.lout,
              y->typed_data() + d * s.lout * s.in.n, fold_every, &cen);
  }
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

XLA_FFI_DEFINE_HANDLER_SYMBOL(BconvCenteredCpu, BconvCenteredCpuImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()  // x [..., Lin, N]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // in_consts [D * 3, Lin]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // mat [D * Lout, Lin]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // out_consts [D * 4, Lout]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // inv_fix [D * Lin]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // src_prod [D * Lout]
                                  .Ret<ffi::Buffer<ffi::U32>>()  // y [..., D * Lout, N]
                                  .Attr<int64_t>("fold_every")
                                  .Attr<ffi::Span<const int64_t>>("starts")     // [D]
                                  .Attr<ffi::Span<const int64_t>>("fix_bits"));  // [D]

}  // namespace jax_fhe
