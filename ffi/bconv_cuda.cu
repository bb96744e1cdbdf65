// Base conversion on CUDA, plain and centered, bit-identical to bconv_cpu.cc (semantics in
// bconv_args.h).
//
// One thread owns VEC consecutive coefficients of one batch entry: it loads the Lin input
// residues once (vector loads, coalesced across the warp), pre-multiplies them in registers,
// and writes every output limb of its output group once, OUTS limbs per step. The table slice
// of the block's output group sits in shared memory; all threads of a warp read the same entry
// (broadcast).
// Accumulation is 64-bit (IMAD.WIDE); with FOLD=false there is no reduction until the end.
// When the grid would be too small to fill the GPU (small batch), the output limbs are split
// over blockIdx.z; the inputs are then re-read from L2.
// CENTERED (jax_fhe_bconv_centered, at most 16 inputs): the pre-multiplied inputs are exactly
// what the fixed-point quotient needs, so k = round(sum_j y_j / q_j) costs one mulhi per input
// limb, and every output is written once, already corrected by -k Q (no second pass). Without
// FOLD the correction is one more multiply-add, k (p_i - Q mod p_i), into the accumulator
// before its single reduction (k < 2^(32 - fix_bits)); the caller's fold_every leaves room for
// it (jax_fhe.ops.bconv forces folding where it would not). With FOLD, k Q is reduced apart.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <type_traits>

#include "bconv_args.h"
#include "common.h"
#include "cuda_device.cuh"
#include "modarith.h"

namespace jax_fhe {

namespace {

constexpr int kThreads = 256;

template <int VEC>
struct VecIO;
template <>
struct VecIO<1> {
  static __device__ __forceinline__ void load(const uint32_t* p, uint32_t (&v)[1]) { v[0] = *p; }
  static __device__ __forceinline__ void store(uint32_t* p, const uint32_t (&v)[1]) { *p = v[0]; }
};
template <>
struct VecIO<2> {
  static __device__ __forceinline__ void load(const uint32_t* p, uint32_t (&v)[2]) {
    uint2 t = *reinterpret_cast<const uint2*>(p);
    v[0] = t.x;
    v[1] = t.y;
  }
  static __device__ __forceinline__ void store(uint32_t* p, const uint32_t (&v)[2]) {
    *reinterpret_cast<uint2*>(p) = make_uint2(v[0], v[1]);
  }
};
template <>
struct VecIO<4> {
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
__device__ __forceinline__ uint64_t mad_wide(uint32_t a, uint32_t b, uint64_t acc) {
  uint64_t d;
  asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(d) : "r"(a), "r"(b), "l"(acc));
  return d;
}

// KMAX: the input-limb count rounded up to a multiple of 4. Inputs beyond Lin are zero and the
// table rows are zero-padded in shared memory, so the multiply-accumulate loop has a
// compile-time trip count and no branches.
// The centered conversion's extra inputs (device pointers); unused by the plain kernel.
struct Centering {
  const uint32_t* inv_fix;   // [Lin]
  const uint32_t* src_prod;  // [Lout]
  int fix_bits;
};

template <int KMAX, int VEC, int OUTS, bool FOLD, bool CENTERED>
__global__ void __launch_bounds__(kThreads)
    bconv_kernel(const uint32_t* __restrict__ x, uint32_t* __restrict__ y, int lin, int lout,
                 int n, int64_t x_stride, int64_t y_stride, int digits, int out_per_block,
                 int fold_every, const uint32_t* __restrict__ in_c,
                 const uint32_t* __restrict__ mat, const uint32_t* __restrict__ out_c,
                 Centering cen) {
  static_assert(KMAX % 4 == 0, "table rows are read as 16-byte vectors");
  static_assert(!CENTERED || KMAX <= 16, "the fixed-point quotient sums at most 16 terms");
  extern __shared__ uint4 sm4[];
  // blockIdx.y = batch entry * digits + conversion: conversion d has its own tables, reads
  // input limbs from d * lin and writes output limbs from d * lout (bconv_args.h)
  const int dg = static_cast<int>(blockIdx.y % static_cast<unsigned>(digits));
  const int64_t b = blockIdx.y / static_cast<unsigned>(digits);
  in_c += dg * 3 * lin;
  mat += static_cast<int64_t>(dg) * lout * lin;
  out_c += dg * 4 * lout;
  if (CENTERED) {
    cen.inv_fix += dg * lin;
    cen.src_prod += dg * lout;
  }
  x += static_cast<int64_t>(dg) * lin * n;
  y += static_cast<int64_t>(dg) * lout * n;
  const int o0 = blockIdx.z * out_per_block;
  const int on = min(out_per_block, lout - o0);
  uint32_t* sT = reinterpret_cast<uint32_t*>(sm4);  // [on][KMAX], zero-padded
  uint4* sOut = sm4 + out_per_block * KMAX / 4;     // [on]: p, r32, r32_shoup, one_shoup
  // CENTERED: [on] Q mod p_i (FOLD) or p_i - Q mod p_i (no FOLD: added k times to the sum)
  uint32_t* sProd = reinterpret_cast<uint32_t*>(sOut + out_per_block);
  for (int k = threadIdx.x; k < on * KMAX; k += blockDim.x) {
    const int i = k / KMAX, j = k % KMAX;
    sT[k] = j < lin ? mat[(o0 + i) * lin + j] : 0u;
  }
  for (int k = threadIdx.x; k < on; k += blockDim.x) {
    sOut[k] = make_uint4(out_c[o0 + k], out_c[lout + o0 + k], out_c[2 * lout + o0 + k],
                         out_c[3 * lout + o0 + k]);
    if (CENTERED) {
      const uint32_t p = out_c[o0 + k], qp = cen.src_prod[o0 + k];
      sProd[k] = FOLD ? qp : (qp % p == 0 ? 0u : p - qp % p);
    }
  }
  __syncthreads();

  const int c = (blockIdx.x * kThreads + threadIdx.x) * VEC;
  if (c >= n) return;
  const uint32_t* xb = x + b * x_stride + c;
  uint32_t* yb = y + b * y_stride + static_cast<int64_t>(o0) * n + c;

  // pre-multiply the inputs by (Q/q_j)^-1 mod q_j (CENTERED: and sum their fixed-point fractions)
  uint32_t v[KMAX][VEC];
  uint32_t kq[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) kq[e] = 0;
#pragma unroll
  for (int j = 0; j < KMAX; ++j) {
    if (j < lin) {
      VecIO<VEC>::load(xb + static_cast<int64_t>(j) * n, v[j]);
      const uint32_t q = __ldg(in_c + j), w = __ldg(in_c + lin + j), ws = __ldg(in_c + 2 * lin + j);
#pragma unroll
      for (int e = 0; e < VEC; ++e) v[j][e] = mul_shoup(v[j][e], w, ws, q);
      if (CENTERED) {
        const uint32_t fx = __ldg(cen.inv_fix + j);
#pragma unroll
        for (int e = 0; e < VEC; ++e) kq[e] += __umulhi(v[j][e], fx);  // wraps like crt's uint32 sum
      }
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e) v[j][e] = 0;
    }
  }
  if (CENTERED) {
#pragma unroll
    for (int e = 0; e < VEC; ++e) kq[e] = (kq[e] + (1u << (cen.fix_bits - 1))) >> cen.fix_bits;
  }
  const uint4* sT4 = reinterpret_cast<const uint4*>(sT);
  // NO output limbs i0 .. i0 + NO - 1 at once: NO * VEC independent accumulations in flight,
  // and one reduction's latency overlaps the other's sums
  auto outputs = [&](int i0, auto no_tag) {
    constexpr int NO = decltype(no_tag)::value;
    Reduce64 red[NO];
    uint64_t acc[NO][VEC];
#pragma unroll
    for (int o = 0; o < NO; ++o) {
      const uint4 rc = sOut[i0 + o];
      red[o] = Reduce64{rc.x, rc.y, rc.z, rc.w};
#pragma unroll
      for (int e = 0; e < VEC; ++e) acc[o][e] = 0;
    }
#pragma unroll
    for (int j4 = 0; j4 < KMAX / 4; ++j4) {
      uint32_t t[NO][4];
#pragma unroll
      for (int o = 0; o < NO; ++o) {
        const uint4 t4 = sT4[(i0 + o) * (KMAX / 4) + j4];
        t[o][0] = t4.x, t[o][1] = t4.y, t[o][2] = t4.z, t[o][3] = t4.w;
      }
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int j = 4 * j4 + jj;
#pragma unroll
        for (int o = 0; o < NO; ++o)
#pragma unroll
          for (int e = 0; e < VEC; ++e) acc[o][e] = mad_wide(t[o][jj], v[j][e], acc[o][e]);
        if (FOLD && (j + 1) % fold_every == 0) {
#pragma unroll
          for (int o = 0; o < NO; ++o)
#pragma unroll
            for (int e = 0; e < VEC; ++e) acc[o][e] = reduce64(acc[o][e], red[o]);
        }
      }
    }
#pragma unroll
    for (int o = 0; o < NO; ++o) {
      const int i = i0 + o;
      uint32_t out[VEC];
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        if (CENTERED && !FOLD) acc[o][e] = mad_wide(kq[e], sProd[i], acc[o][e]);  // - k Q (mod p_i)
        out[e] = reduce64(acc[o][e], red[o]);
        // k Q mod p_i: reduce the exact product
        if (CENTERED && FOLD)
          out[e] = sub_mod(out[e], reduce64(static_cast<uint64_t>(kq[e]) * sProd[i], red[o]), red[o].p);
      }
      VecIO<VEC>::store(yb + static_cast<int64_t>(i) * n, out);
    }
  };
  int i = 0;
  for (; i + OUTS <= on; i += OUTS) outputs(i, std::integral_constant<int, OUTS>{});
  for (; i < on; ++i) outputs(i, std::integral_constant<int, 1>{});
}

template <int KMAX, int VEC, bool CENTERED, int OUTS = 1>
void launch(cudaStream_t stream, const BconvShape& s, bool fold, int fold_every,
            const uint32_t* x, uint32_t* y, const uint32_t* in_c, const uint32_t* mat,
            const uint32_t* out_c, const Centering& cen) {
  const int n = static_cast<int>(s.in.n), lin = static_cast<int>(s.lin), lout = static_cast<int>(s.lout);
  const int tiles = (n + kThreads * VEC - 1) / (kThreads * VEC);
  const int64_t blocks_xy = static_cast<int64_t>(tiles) * s.batch * s.digits;
  // split the output limbs over blockIdx.z until the grid has JAX_FHE_BCONV_BLOCKS_PER_SM
  // blocks per SM (tuning; each split re-reads the inputs, from L2)
  static const int64_t per_sm = std::max<int64_t>(1, tuning_int("JAX_FHE_BCONV_BLOCKS_PER_SM", 2));
  int splits = static_cast<int>(std::min<int64_t>(lout, std::max<int64_t>(1, (per_sm * sm_count() + blocks_xy - 1) / blocks_xy)));
  // shared memory per output limb: its padded table row, four reduction constants (and
  // Q mod p_i when centering); stay within the 48 KB a launch gets without opting in
  const int per_out = KMAX + 4 + (CENTERED ? 1 : 0);
  const int max_per_block = (48 << 10) / static_cast<int>(sizeof(uint32_t) * per_out);
  splits = std::max(splits, (lout + max_per_block - 1) / max_per_block);
  const int per_block = (lout + splits - 1) / splits;
  splits = (lout + per_block - 1) / per_block;
  const size_t smem = sizeof(uint32_t) * per_block * per_out;
  const int digits = static_cast<int>(s.digits);
  const int64_t max_batch = 65535 / digits;  // grid.y = batch entries x digits
  for (int64_t b0 = 0; b0 < s.batch; b0 += max_batch) {
    const int64_t nb = std::min<int64_t>(max_batch, s.batch - b0);
    dim3 grid(tiles, static_cast<unsigned>(nb * digits), splits);
    const uint32_t* xs = x + b0 * s.in_stride() + s.offset * n;
    uint32_t* ys = y + b0 * s.out_stride();
    auto kernel = fold ? bconv_kernel<KMAX, VEC, OUTS, true, CENTERED> : bconv_kernel<KMAX, VEC, OUTS, false, CENTERED>;
    kernel<<<grid, kThreads, smem, stream>>>(xs, ys, lin, lout, n, s.in_stride(), s.out_stride(),
                                             digits, per_block, fold_every, in_c, mat, out_c, cen);
  }
}

// Kernel choice by input count: KMAX = Lin rounded up, VEC coefficients per thread.
template <bool CENTERED>
ffi::Error run_bconv(cudaStream_t stream, const BconvShape& s, int64_t fold_every, const uint32_t* x,
                     uint32_t* y, const uint32_t* in_c, const uint32_t* mat, const uint32_t* out_c,
                     const Centering& cen) {
  if (s.batch == 0 || s.lout == 0) return ffi::Error::Success();
  const bool fold = fold_every < s.lin;
  const int fe = static_cast<int>(std::min<int64_t>(fold_every, s.lin));
  auto args = [&](auto launcher) { launcher(stream, s, fold, fe, x, y, in_c, mat, out_c, cen); };
  // Coefficients per thread at 9..12 inputs: 4 (80 registers) where the grid fills the GPU
  // without splitting the output limbs, else 2 (60 registers, so more warps per SM).
  // H200, one (48, 12, 4) key switch (Nsight Compute): ModUp's conversion 44.4 us at 2 against
  // 48.3 at 4, ModDown's 26.5 against 27.3; H100, 12 -> 48 at B = 16: 4 is faster (166 against
  // 177 us). JAX_FHE_BCONV_VEC (1, 2 or 4) forces a width (tuning).
  static const int env_vec = static_cast<int>(tuning_int("JAX_FHE_BCONV_VEC", 0));
  const int64_t wide_blocks = (s.in.n + kThreads * 4 - 1) / (kThreads * 4) * s.batch * s.digits;
  const int vec12 = env_vec > 0 ? env_vec : (wide_blocks >= 2 * static_cast<int64_t>(sm_count()) ? 4 : 2);
  if (s.lin <= 4) args(launch<4, 4, CENTERED>);
  else if (s.lin <= 8) args(launch<8, 4, CENTERED>);
  else if (s.lin <= 12) {
    // two output limbs per step at 2 and 4 coefficients per thread (JAX_FHE_BCONV_OUTS=1: one).
    // H200 (Nsight Compute): one (48, 12, 4) key switch, ModUp's conversion 44.3 against
    // 46.2 us, ModDown's 26.4 against 27.2; at B = 16 577 against 589 and 293 against 303. Four
    // per step cut instructions 14% but not time (80 registers); at 1 per thread, no gain.
    static const bool pair = tuning_int("JAX_FHE_BCONV_OUTS", 2) >= 2;
    if (vec12 >= 4)
      pair ? args(launch<12, 4, CENTERED, 2>) : args(launch<12, 4, CENTERED>);
    else if (vec12 >= 2)
      pair ? args(launch<12, 2, CENTERED, 2>) : args(launch<12, 2, CENTERED>);
    else
      args(launch<12, 1, CENTERED>);
  }
  else if (s.lin <= 16) args(launch<16, 4, CENTERED>);
  else if constexpr (!CENTERED) {  // the centered handler's checks stop at 16 inputs
    if (s.lin <= 24) args(launch<24, 2, false>);
    else if (s.lin <= 32) args(launch<32, 1, false>);
    else if (s.lin <= 48) args(launch<48, 1, false>);
    else args(launch<64, 1, false>);
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return ffi::Error::Internal(std::string("bconv kernel launch failed: ") + cudaGetErrorString(err));
  return ffi::Error::Success();
}

ffi::Error BconvCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                         ffi::Buffer<ffi::U32> in_consts, ffi::Buffer<ffi::U32> mat,
                         ffi::Buffer<ffi::U32> out_consts, ffi::ResultBuffer<ffi::U32> y,
                         int64_t fold_every) {
  BconvShape s;
  if (auto e = check_bconv_args(x.dimensions(), in_consts.dimensions(), mat.dimensions(),
                                out_consts.dimensions(), y->dimensions(), fold_every, &s);
      e.failure())
    return e;
  return run_bconv<false>(stream, s, fold_every, x.typed_data(), y->typed_data(),
                          in_consts.typed_data(), mat.typed_data(), out_consts.typed_data(),
                          Centering{nullptr, nullptr, 1});
}

ffi::Error BconvCenteredCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                                 ffi::Buffer<ffi::U32> in_consts, ffi::Buffer<ffi::U32> mat,
                                 ffi::Buffer<ffi::U32> out_consts, ffi::Buffer<ffi::U32> inv_fix,
                                 ffi::Buffer<ffi::U32> src_prod, ffi::ResultBuffer<ffi::U32> y,
                                 int64_t fold_every, int64_t fix_bits, int64_t limb_offset,
                                 int64_t digits) {
  BconvShape s;
  if (auto e = check_bconv_centered_args(x.dimensions(), in_consts.dimensions(), mat.dimensions(),
                                         out_consts.dimensions(), inv_fix.dimensions(),
                                         src_prod.dimensions(), y->dimensions(), fold_every,
                                         fix_bits, limb_offset, digits, &s);
      e.failure())
    return e;
  return run_bconv<true>(stream, s, fold_every, x.typed_data(), y->typed_data(),
                         in_consts.typed_data(), mat.typed_data(), out_consts.typed_data(),
                         Centering{inv_fix.typed_data(), src_prod.typed_data(), static_cast<int>(fix_bits)});
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(BconvCuda, BconvCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<int64_t>("fold_every"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(BconvCenteredCuda, BconvCenteredCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()  // x [..., Lin, N]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // in_consts [D * 3, Lin]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // mat [D * Lout, Lin]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // out_consts [D * 4, Lout]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // inv_fix [D * Lin]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // src_prod [D * Lout]
                                  .Ret<ffi::Buffer<ffi::U32>>()  // y [..., D * Lout, N]
                                  .Attr<int64_t>("fold_every")
                                  .Attr<int64_t>("fix_bits")
                                  .Attr<int64_t>("limb_offset")
                                  .Attr<int64_t>("digits"),
                              {ffi::Traits::kCmdBufferCompatible});

}  // namespace jax_fhe
