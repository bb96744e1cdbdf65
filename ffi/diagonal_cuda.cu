// The giant-step sums of a BSGS linear transform on CUDA, bit-identical to diagonal_cpu.cc
// (semantics in diagonal_args.h). A thread owns one coefficient of one row and batch entry and
// loops over the giant steps: each diagonal word is read once from HBM (a repeated word of a
// sparse diagonal, pts[.., t >> s], by the 2^s neighbouring threads together); a baby rotation's word
// is read once per giant step, the repeats served by L1/L2 (the block's baby words stay small);
// each output word is written once. Absent diagonals add 0 and the sums are reduced every four
// terms, so the canonical results equal the CPU's, which skips them.
#include <cuda_runtime.h>

#include <algorithm>

#include "common.h"
#include "cuda_device.cuh"
#include "diagonal_args.h"

namespace jax_fhe {

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 8;   // baby steps whose loads are in flight together

// One launch: up to 32 baby rotations, 16 giant steps and 64 rows (a kernel parameter < 4 KB).
struct DiagonalPlan {
  const uint32_t* x[kDiagMaxBaby];
  uint32_t* out[kDiagMaxGiant];
  int32_t index[kDiagMaxGiant][kDiagMaxBaby];
  Reduce64 row[kDiagMaxRows];
  uint32_t x_batched;   // bit i: x_i has every batch entry (else its single one serves all)
  int32_t baby, giant, row0, rows;
};
static_assert(sizeof(DiagonalPlan) < 4000, "the plan must fit the kernel parameter space");

__global__ void __launch_bounds__(kThreads)
diagonal_sums_kernel(const uint32_t* __restrict__ pts, const __grid_constant__ DiagonalPlan plan,
                     int log_n, int log_repeat) {
  const int64_t n = int64_t{1} << log_n, m = n >> log_repeat;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int jl = blockIdx.y;
  const int64_t j = plan.row0 + jl, b = blockIdx.z, R = plan.rows;
  const Reduce64 red = plan.row[jl];
  const int64_t part1 = R * n;
  const int64_t own = (b * 2 * R + j) * n + t;       // this thread's word in a batched operand
  const int64_t shared = j * n + t;                   // ... in an operand with one batch entry
  for (int g = 0; g < plan.giant; ++g) {
    uint64_t a0 = 0, a1 = 0;
    for (int i0 = 0; i0 < plan.baby; i0 += kUnroll) {
      // every load of the chunk issued before the first product: the diagonals stream from HBM,
      // and one load in flight per thread would leave the bandwidth to latency
      uint32_t w[kUnroll], x0[kUnroll], x1[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int i = i0 + u;
        const int d = i < plan.baby ? plan.index[g][i] : -1;
        w[u] = x0[u] = x1[u] = 0;  // an absent diagonal adds 0
        if (d >= 0) {
          w[u] = __ldg(pts + (static_cast<int64_t>(d) * R + j) * m + (t >> log_repeat));
          const uint32_t* xp = plan.x[i] + (((plan.x_batched >> i) & 1u) ? own : shared);
          x0[u] = __ldg(xp);
          x1[u] = __ldg(xp + part1);
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (u % 4 == 0 && (u > 0 || i0 > 0)) {  // (p - 1) + 4 (p - 1)^2 < 2^64 for p < 2^31
          a0 = reduce64(a0, red);
          a1 = reduce64(a1, red);
        }
        a0 += static_cast<uint64_t>(x0[u]) * w[u];
        a1 += static_cast<uint64_t>(x1[u]) * w[u];
      }
    }
    uint32_t* o = plan.out[g] + own;
    o[0] = reduce64(a0, red);
    o[part1] = reduce64(a1, red);
  }
}

ffi::Error DiagonalSumsCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> pts,
                                ffi::RemainingArgs xs, ffi::RemainingRets outs,
                                ffi::Span<const int32_t> index, ffi::Span<const int64_t> moduli) {
  DiagonalCall c;
  if (auto e = decode_diagonal_args(pts, xs, outs, index, moduli, &c); e.failure()) return e;
  const DiagonalShape& s = c.s;
  if (s.baby > kDiagMaxBaby)
    return diag_error("at most " + std::to_string(kDiagMaxBaby) + " baby rotations per call");
  if (s.batch > 65535) return diag_error("at most 65535 batch entries per call");
  const int log_n = log2_exact(s.n);
  if (s.batch == 0) return ffi::Error::Success();
  DiagonalPlan plan{};
  plan.baby = static_cast<int32_t>(s.baby);
  plan.rows = static_cast<int32_t>(s.rows);
  for (int64_t i = 0; i < s.baby; ++i) {
    plan.x[i] = c.x[i];
    if (s.x_batched[i]) plan.x_batched |= 1u << i;
  }
  for (int64_t g0 = 0; g0 < s.giant; g0 += kDiagMaxGiant) {
    plan.giant = static_cast<int32_t>(std::min<int64_t>(kDiagMaxGiant, s.giant - g0));
    for (int g = 0; g < plan.giant; ++g) {
      plan.out[g] = c.out[g0 + g];
      for (int64_t i = 0; i < s.baby; ++i)
        plan.index[g][i] = index[(g0 + g) * s.baby + i];
    }
    for (int64_t r0 = 0; r0 < s.rows; r0 += kDiagMaxRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kDiagMaxRows, s.rows - r0));
      plan.row0 = static_cast<int32_t>(r0);
      for (int r = 0; r < rows; ++r) plan.row[r] = c.rows[r0 + r];
      const dim3 grid(static_cast<unsigned>(s.n / kThreads), static_cast<unsigned>(rows),
                      static_cast<unsigned>(s.batch));
      diagonal_sums_kernel<<<grid, kThreads, 0, stream>>>(pts.typed_data(), plan, log_n, s.log_repeat);
    }
  }
  return launch_status("diagonal_sums");
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(DiagonalSumsCuda, DiagonalSumsCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .RemainingArgs()
                                  .RemainingRets()
                                  .Attr<ffi::Span<const int32_t>>("index")
                                  .Attr<ffi::Span<const int64_t>>("moduli"),
                              {ffi::Traits::kCmdBufferCompatible});

}  // namespace jax_fhe
