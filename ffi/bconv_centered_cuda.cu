// Centered base conversion on CUDA, bit-identical to bconv_centered_cpu.cc (semantics in
// bconv_centered_args.h). Same layout as the plain BConv kernel (bconv_cuda.cu): one thread owns
// VEC consecutive coefficients of one batch entry, loads its Lin input residues once and
// pre-multiplies them in registers. The pre-multiplied y_j are exactly what the fixed-point
// quotient needs, so k = round(sum_j y_j / q_j) costs one mulhi per input limb, and every output
// limb is written once, already corrected by -k Q: no second pass over the converted limbs.
// When the grid is small the output limbs are split over blockIdx.z and each split recomputes
// k from the (L2-resident) inputs.
#include <cuda_runtime.h>

#include <algorithm>

#include "bconv_centered_args.h"
#include "common.h"
#include "modarith.h"

namespace jax_fhe {

namespace {

constexpr int kThreads = 256;

// Only 4-wide: N >= 2^10 is a multiple of 4, and Lin <= 16 keeps 4 coefficients per thread in
// registers (104 at Lin = 16 on sm_90a, no spills).
template <int VEC>
struct CenteredIO;
template <>
struct CenteredIO<4> {
  static __device__ __forceinline__ void load(const uint32_t* p, uint32_t (&v)[4]) {
    uint4 t = *reinterpret_cast<const uint4*>(p);
    v[0] = t.x;
    v[1] = t.y;
    v[2] = t.z;
    v[3] = t.w;
  }
  static __device__ __forceinline__ void store(uint32_t* p, const uint32_t (&v)[4]) {
    *reinterpret_cast<uint4*>(p) = make_uint4(v[0], v[1], v[2], v[3]);
  }
};

// acc + a * b with one 32x32 -> 64-bit multiply-add (IMAD.WIDE.U32).
__device__ __forceinline__ uint64_t mad_wide_c(uint32_t a, uint32_t b, uint64_t acc) {
  uint64_t d;
  asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(d) : "r"(a), "r"(b), "l"(acc));
  return d;
}

// KMAX: Lin rounded up to a multiple of 4 (at most 16). Inputs beyond Lin are zero and the
// table rows are zero-padded in shared memory, so the multiply-accumulate loop has a
// compile-time trip count.
template <int KMAX, int VEC, bool FOLD>
__global__ void __launch_bounds__(kThreads)
    bconv_centered_kernel(const uint32_t* __restrict__ x, uint32_t* __restrict__ y, int lin,
                          int lout, int n, int out_per_block, int fold_every, int fix_bits,
                          const uint32_t* __restrict__ in_c, const uint32_t* __restrict__ mat,
                          const uint32_t* __restrict__ out_c, const uint32_t* __restrict__ inv_fix,
                          const uint32_t* __restrict__ src_prod) {
  static_assert(KMAX % 4 == 0 && KMAX <= 16, "table rows are 16-byte vectors; Lin <= 16");
  extern __shared__ uint4 smc4[];
  const int o0 = blockIdx.z * out_per_block;
  const int on = min(out_per_block, lout - o0);
  uint32_t* sT = reinterpret_cast<uint32_t*>(smc4);                // [on][KMAX], zero-padded
  uint4* sOut = smc4 + out_per_block * KMAX / 4;                   // [on]: p, r32, r32_s, one_s
  uint32_t* sProd = reinterpret_cast<uint32_t*>(sOut + out_per_block);  // [on]: Q mod p_i
  for (int k = threadIdx.x; k < on * KMAX; k += blockDim.x) {
    const int i = k / KMAX, j = k % KMAX;
    sT[k] = j < lin ? mat[(o0 + i) * lin + j] : 0u;
  }
  for (int k = threadIdx.x; k < on; k += blockDim.x) {
    sOut[k] = make_uint4(out_c[o0 + k], out_c[lout + o0 + k], out_c[2 * lout + o0 + k],
                         out_c[3 * lout + o0 + k]);
    sProd[k] = src_prod[o0 + k];
  }
  __syncthreads();

  const int c = (blockIdx.x * kThreads + threadIdx.x) * VEC;
  if (c >= n) return;
  const int64_t b = blockIdx.y;
  const uint32_t* xb = x + b * lin * n + c;
  uint32_t* yb = y + (b * lout + o0) * n + c;

  // pre-multiply the inputs by (Q/q_j)^-1 mod q_j and sum their fixed-point fractions
  uint32_t v[KMAX][VEC];
  uint32_t frac[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) frac[e] = 0;
#pragma unroll
  for (int j = 0; j < KMAX; ++j) {
    if (j < lin) {
      CenteredIO<VEC>::load(xb + static_cast<int64_t>(j) * n, v[j]);
      const uint32_t q = __ldg(in_c + j), w = __ldg(in_c + lin + j), ws = __ldg(in_c + 2 * lin + j);
      const uint32_t fx = __ldg(inv_fix + j);
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        v[j][e] = mul_shoup(v[j][e], w, ws, q);
        frac[e] += __umulhi(v[j][e], fx);  // wraps like crt.rounded_quotient's uint32 sum
      }
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e) v[j][e] = 0;
    }
  }
  uint32_t kq[VEC];
  const uint32_t half = 1u << (fix_bits - 1);
#pragma unroll
  for (int e = 0; e < VEC; ++e) kq[e] = (frac[e] + half) >> fix_bits;

  const uint4* sT4 = reinterpret_cast<const uint4*>(sT);
  for (int i = 0; i < on; ++i) {
    const uint4 rc = sOut[i];
    const Reduce64 red{rc.x, rc.y, rc.z, rc.w};
    const uint32_t qp = sProd[i];
    uint64_t acc[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc[e] = 0;
#pragma unroll
    for (int j4 = 0; j4 < KMAX / 4; ++j4) {
      const uint4 t4 = sT4[i * (KMAX / 4) + j4];
      const uint32_t t[4] = {t4.x, t4.y, t4.z, t4.w};
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int j = 4 * j4 + jj;
#pragma unroll
        for (int e = 0; e < VEC; ++e) acc[e] = mad_wide_c(t[jj], v[j][e], acc[e]);
        if (FOLD && (j + 1) % fold_every == 0) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) acc[e] = reduce64(acc[e], red);
        }
      }
    }
    uint32_t out[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      // k Q mod p_i: k may be any word (it is <= Lin for valid inputs), reduce the exact product
      const uint32_t corr = reduce64(static_cast<uint64_t>(kq[e]) * qp, red);
      out[e] = sub_mod(reduce64(acc[e], red), corr, red.p);
    }
    CenteredIO<VEC>::store(yb + static_cast<int64_t>(i) * n, out);
  }
}

int sm_count_centered() {
  static const int count = [] {
    int dev = 0, c = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || c <= 0)
      c = 100;
    return c;
  }();
  return count;
}

template <int KMAX, int VEC>
void launch_centered(cudaStream_t stream, const BconvShape& s, bool fold, int fold_every,
                     int fix_bits, const uint32_t* x, uint32_t* y, const uint32_t* in_c,
                     const uint32_t* mat, const uint32_t* out_c, const uint32_t* inv_fix,
                     const uint32_t* src_prod) {
  const int n = static_cast<int>(s.in.n), lin = static_cast<int>(s.lin), lout = static_cast<int>(s.lout);
  const int tiles = (n + kThreads * VEC - 1) / (kThreads * VEC);
  const int64_t blocks_xy = static_cast<int64_t>(tiles) * s.batch;
  int splits = static_cast<int>(std::min<int64_t>(
      lout, std::max<int64_t>(1, (2 * sm_count_centered() + blocks_xy - 1) / blocks_xy)));
  // shared memory per output limb: its padded table row, four reduction constants and Q mod p_i;
  // stay within the 48 KB a launch gets without opting in
  const int max_per_block = (48 << 10) / static_cast<int>(sizeof(uint32_t) * (KMAX + 5));
  splits = std::max(splits, (lout + max_per_block - 1) / max_per_block);
  const int per_block = (lout + splits - 1) / splits;
  splits = (lout + per_block - 1) / per_block;
  const size_t smem = sizeof(uint32_t) * (per_block * KMAX + 5 * per_block);
  for (int64_t b0 = 0; b0 < s.batch; b0 += 65535) {
    const int64_t nb = std::min<int64_t>(65535, s.batch - b0);
    dim3 grid(tiles, static_cast<unsigned>(nb), splits);
    const uint32_t* xs = x + b0 * lin * n;
    uint32_t* ys = y + b0 * lout * n;
    if (fold)
      bconv_centered_kernel<KMAX, VEC, true><<<grid, kThreads, smem, stream>>>(
          xs, ys, lin, lout, n, per_block, fold_every, fix_bits, in_c, mat, out_c, inv_fix, src_prod);
    else
      bconv_centered_kernel<KMAX, VEC, false><<<grid, kThreads, smem, stream>>>(
          xs, ys, lin, lout, n, per_block, fold_every, fix_bits, in_c, mat, out_c, inv_fix, src_prod);
  }
}

ffi::Error BconvCenteredCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                                 ffi::Buffer<ffi::U32> in_consts, ffi::Buffer<ffi::U32> mat,
                                 ffi::Buffer<ffi::U32> out_consts, ffi::Buffer<ffi::U32> inv_fix,
                                 ffi::Buffer<ffi::U32> src_prod, ffi::ResultBuffer<ffi::U32> y,
                                 int64_t fold_every, int64_t fix_bits) {
  BconvShape s;
  if (auto e = check_bconv_centered_args(x.dimensions(), in_consts.dimensions(), mat.dimensions(),
                                         out_consts.dimensions(), inv_fix.dimensions(),
                                         src_prod.dimensions(), y->dimensions(), fold_every,
                                         fix_bits, &s);
      e.failure())
    return e;
  if (s.batch == 0 || s.lout == 0) return ffi::Error::Success();
  const bool fold = fold_every < s.lin;
  const int fe = static_cast<int>(std::min<int64_t>(fold_every, s.lin));
  auto args = [&](auto launcher) {
    launcher(stream, s, fold, fe, static_cast<int>(fix_bits), x.typed_data(), y->typed_data(),
             in_consts.typed_data(), mat.typed_data(), out_consts.typed_data(),
             inv_fix.typed_data(), src_prod.typed_data());
  };
  // VEC as in the plain BConv kernel at the same Lin (<= 16 inputs: 4 coefficients per thread)
  if (s.lin <= 4) args(launch_centered<4, 4>);
  else if (s.lin <= 8) args(launch_centered<8, 4>);
  else if (s.lin <= 12) args(launch_centered<12, 4>);
  else args(launch_centered<16, 4>);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return ffi::Error::Internal(std::string("bconv_centered kernel launch failed: ") +
                                cudaGetErrorString(err));
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(BconvCenteredCuda, BconvCenteredCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()  // x [..., Lin, N]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // in_consts [3, Lin]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // mat [Lout, Lin]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // out_consts [4, Lout]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // inv_fix [Lin]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // src_prod [Lout]
                                  .Ret<ffi::Buffer<ffi::U32>>()  // y [..., Lout, N]
                                  .Attr<int64_t>("fold_every")
                                  .Attr<int64_t>("fix_bits"),
                              {ffi::Traits::kCmdBufferCompatible});

}  // namespace jax_fhe
