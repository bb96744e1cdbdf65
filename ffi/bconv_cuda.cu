// Base conversion on CUDA, plain and centered, bit-identical to bconv_cpu.cc (semantics in
// bconv_args.h). Two kernels: up to 16 inputs on sm_80 and newer, the tensor-core kernel
// (bconv_mma_kernel, its design at its definition); otherwise the SIMT kernel below.
//
// SIMT kernel: one thread owns VEC consecutive coefficients of one batch entry: it loads the Lin input
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
#include "mma_device.cuh"
#include "modarith.h"
#include "tuning.h"

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
  int fix_bits;              // set per conversion by select_conversion
};

// The tables, first input limb and precision of conversion dg of a stacked launch (digits > 1,
// bconv_args.h).
template <bool CENTERED, typename Ptr>  // Ptr: the kernels' const uint32_t* __restrict__
__device__ __forceinline__ void select_conversion(int dg, int lin, int lout, int n, const BconvDigits& dgs,
                                                  Ptr& x, Ptr& in_c, Ptr& mat, Ptr& out_c,
                                                  Centering& cen) {
  x += static_cast<int64_t>(dgs.start[dg]) * n;
  in_c += dg * 3 * lin;
  mat += static_cast<int64_t>(dg) * lout * lin;
  out_c += dg * 4 * lout;
  if (CENTERED) {
    cen.inv_fix += dg * lin;
    cen.src_prod += dg * lout;
    cen.fix_bits = dgs.fix_bits[dg];
  }
}

template <int KMAX, int VEC, int OUTS, bool FOLD, bool CENTERED>
__global__ void __launch_bounds__(kThreads)
    bconv_kernel(const uint32_t* __restrict__ x, uint32_t* __restrict__ y, int lin, int lout,
                 int n, int64_t x_stride, int64_t y_stride, int digits, int out_per_block,
                 int fold_every, const uint32_t* __restrict__ in_c,
                 const uint32_t* __restrict__ mat, const uint32_t* __restrict__ out_c,
                 Centering cen, const BconvDigits dgs) {
  static_assert(KMAX % 4 == 0, "table rows are read as 16-byte vectors");
  static_assert(!CENTERED || KMAX <= 16, "the fixed-point quotient sums at most 16 terms");
  extern __shared__ uint4 sm4[];
  // blockIdx.y = batch entry * digits + conversion: conversion d has its own tables, reads
  // input limbs from dgs.start[d] and writes output limbs from d * lout (bconv_args.h)
  const int dg = static_cast<int>(blockIdx.y % static_cast<unsigned>(digits));
  const int64_t b = blockIdx.y / static_cast<unsigned>(digits);
  select_conversion<CENTERED>(dg, lin, lout, n, dgs, x, in_c, mat, out_c, cen);
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
  // split the output limbs over blockIdx.z until the grid has kBconvBlocksPerSm blocks per SM
  // (tuning.h; each split re-reads the inputs, from L2)
  constexpr int64_t per_sm = kBconvBlocksPerSm;
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
    const uint32_t* xs = x + b0 * s.in_stride();
    uint32_t* ys = y + b0 * s.out_stride();
    auto kernel = fold ? bconv_kernel<KMAX, VEC, OUTS, true, CENTERED> : bconv_kernel<KMAX, VEC, OUTS, false, CENTERED>;
    kernel<<<grid, kThreads, smem, stream>>>(xs, ys, lin, lout, n, s.in_stride(), s.out_stride(),
                                             digits, per_block, fold_every, in_c, mat, out_c, cen, s.dg);
  }
}

// ---------------------------------------------------------------------------------------------
// Tensor-core conversion (Lin <= 16, sm_80 and newer): the sum over inputs runs on int8 tensor
// cores, which see only bytes.
//
// With y_j the pre-multiplied inputs (bytes y_j = sum_a 2^(8a) y_ja) and, per output i, the
// table in Montgomery form split into bytes, T_jai = 2^(32 + 8a) mat[i][j] mod p_i
// = sum_b 2^(8b) t_jaib:
//   2^32 sum_j y_j mat[i][j] = sum_b 2^(8b) P_ib  (mod p_i),   P_ib = sum_(j,a) y_ja t_jaib,
// a GEMM of [coefficients x 4 Lin] bytes by [4 Lin x 4 Lout] bytes with exact int32 sums. The
// centered conversion's -k Q is one more input: y_Lin = k with table column -Q mod p_i. With at
// most 17 inputs P_ib < 68 * 255^2 < 2^23, so x = sum_b 2^(8b) P_ib < 2^47 whatever the table
// holds, and one Montgomery reduction per output finishes the job, where the SIMT kernel spends
// two issue slots per 64-bit multiply-add and two Shoup products on the reduction.
//
// The order k = 4j + a makes the A fragment free: the register holding bytes a = 0..3 of row n
// at k = 4j.. is the 32-bit word y_j[n] itself. A warp owns 64 coefficients as four 16-row tiles
// whose rows map to coefficients so that each thread holds 8 of them, two runs of 4 (loads and
// stores are 16-byte vectors, 128 contiguous bytes per 8 lanes). The B fragments (the table's
// byte planes, in fragment order) are built once per block in shared memory. Two 8-column tiles
// make one group of 4 outputs: column c of tile tau is output c / 2, byte 2 tau + c % 2, so
// thread t ends with the four byte sums of output 4 group + t.
constexpr int kMmaMaxThreads = 256;  // 8 warps (kBconvMmaWarps, tuning.h)
constexpr int kWarpCoeffs = 64;

// p^-1 mod 2^32 for odd p (Newton's iteration doubles the correct low bits, from 3)
__device__ __forceinline__ uint32_t inverse_mod_2_32(uint32_t p) {
  uint32_t inv = p;
#pragma unroll
  for (int i = 0; i < 4; ++i) inv *= 2u - p * inv;
  return inv;
}

// x 2^-32 mod p, canonical, for x < 2^63: with m = lo p^-1, x - m p has a zero low word, so
// (x - m p) / 2^32 = hi - mulhi(m, p), in (-p, 2^31); adding p and one Shoup reduction by 1
// (one_shoup = floor(2^32 / p); neg_p = 2^32 - p) makes it canonical for any prime size.
__device__ __forceinline__ uint32_t montgomery_reduce(uint32_t lo, uint32_t hi, uint32_t p,
                                                      uint32_t p_inv, uint32_t one_shoup,
                                                      uint32_t neg_p) {
  const uint32_t u = hi + p - __umulhi(lo * p_inv, p);
  return csub(u + __umulhi(u, one_shoup) * neg_p, p);
}

// R: input registers per thread (inputs j = 4 r + t, r < R; Lin (+1 centered) <= 4 R). Each
// group of 4 outputs costs, per 16-row tile and column tile, R / 2 k32 steps and a k16 step if R
// is odd.
template <int R, bool CENTERED>
__global__ void __launch_bounds__(kMmaMaxThreads, 2)
    bconv_mma_kernel(const uint32_t* __restrict__ x, uint32_t* __restrict__ y, int lin, int lout,
                     int n, int64_t x_stride, int64_t y_stride, int digits, int out_per_block,
                     int iters, const uint32_t* __restrict__ in_c, const uint32_t* __restrict__ mat,
                     const uint32_t* __restrict__ out_c, Centering cen, const BconvDigits dgs) {
  constexpr int KJ = 4 * R;
  extern __shared__ uint4 sm4[];
  const int dg = static_cast<int>(blockIdx.y % static_cast<unsigned>(digits));
  const int64_t b = blockIdx.y / static_cast<unsigned>(digits);
  select_conversion<CENTERED>(dg, lin, lout, n, dgs, x, in_c, mat, out_c, cen);
  const int o0 = blockIdx.z * out_per_block;
  const int on = min(out_per_block, lout - o0);
  const int groups = (on + 3) / 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int warps = blockDim.x / 32;
  // shared memory: sConst [out_per_block] (p, p^-1 mod 2^32, floor(2^32 / p), 2^32 - p),
  // sMul [out_per_block] (floor(2^40 / p), for the table setup), sFrag [groups][2][R][32], and
  // per warp two staging buffers of the inputs, [2 h][lin][8 slots] 16-byte words each
  uint4* sConst = sm4;
  uint32_t* sMul = reinterpret_cast<uint32_t*>(sm4 + out_per_block);
  uint32_t* sFrag = sMul + out_per_block;
  uint4* sStage = reinterpret_cast<uint4*>(sFrag + out_per_block / 4 * 2 * R * 32) + warp * 2 * (16 * lin);

  // The inputs of a chunk are copied to shared memory asynchronously, one chunk ahead (the first
  // during the table setup). A thread copies and later reads the same words: those of input
  // j = 4 r + t at coefficients n0 + 32 h + 4 g + 0..3, in slot (g + 2 j) % 8 of row (h, j), so
  // that the 8 lanes of each quarter-warp hit 8 different 16-byte bank groups.
  const uint32_t* xb = x + b * x_stride + 4 * g;
  auto stage_in = [&](int it) {
    const int n0 = ((blockIdx.x * iters + it) * warps + warp) * kWarpCoeffs;
    if (it >= iters || n0 >= n) return;
    uint4* buf = sStage + (it & 1) * (16 * lin);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int j = 4 * r + t;
      if (j < lin)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          copy_async<16>(buf + (h * lin + j) * 8 + ((g + 2 * j) & 7), xb + static_cast<int64_t>(j) * n + n0 + 32 * h);
    }
    copy_async_commit();
  };
  stage_in(0);

  for (int k = threadIdx.x; k < on; k += blockDim.x) {
    const uint32_t p = __ldg(out_c + o0 + k);
    sConst[k] = make_uint4(p, inverse_mod_2_32(p), __ldg(out_c + 3 * lout + o0 + k), 0u - p);
    sMul[k] = static_cast<uint32_t>((uint64_t{1} << 40) / p);  // Shoup companion of 2^8
  }
  __syncthreads();
  // B fragments: word (group, tau, r, lane = 4 g + t) packs, in byte a, byte b = 2 tau + g % 2
  // of T_jai for output i = o0 + 4 group + g / 2 and input j = 4 r + t (zero past the inputs
  // and outputs)
  for (int k = threadIdx.x; k < groups * 4 * KJ; k += blockDim.x) {
    const int il = k / KJ, j = k % KJ;
    uint32_t tw[4] = {0u, 0u, 0u, 0u};
    if (il < on && (j < lin || (CENTERED && j == lin))) {
      const int i = o0 + il;
      const uint32_t p = sConst[il].x, r32 = __ldg(out_c + lout + i), r32s = __ldg(out_c + 2 * lout + i);
      uint32_t w;
      if (j < lin) {
        w = __ldg(mat + static_cast<int64_t>(i) * lin + j);
      } else {  // the centering input k: -Q mod p_i
        const uint32_t qp = __ldg(cen.src_prod + i) % p;
        w = qp == 0 ? 0u : p - qp;
      }
      uint32_t v = mul_shoup(w, r32, r32s, p);  // 2^32 w mod p_i
      tw[0] = v;
#pragma unroll
      for (int a = 1; a < 4; ++a) tw[a] = v = mul_shoup(v, 256u, sMul[il], p);
    }
    const int grp = il / 4, tj = j % 4, r = j / 4;
#pragma unroll
    for (int bb = 0; bb < 4; ++bb) {
      const uint32_t lo = __byte_perm(tw[0], tw[1], bb | ((4 + bb) << 4));
      const uint32_t hi = __byte_perm(tw[2], tw[3], bb | ((4 + bb) << 4));
      const int gg = 2 * (il % 4) + (bb & 1), tau = bb >> 1;
      sFrag[((grp * 2 + tau) * R + r) * 32 + 4 * gg + tj] = __byte_perm(lo, hi, 0x5410);
    }
  }
  __syncthreads();

  uint32_t iq[R], iw[R], iws[R], ifx[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int j = 4 * r + t;
    const bool ok = j < lin;
    iq[r] = ok ? __ldg(in_c + j) : 1u;
    iw[r] = ok ? __ldg(in_c + lin + j) : 0u;
    iws[r] = ok ? __ldg(in_c + 2 * lin + j) : 0u;
    ifx[r] = CENTERED && ok ? __ldg(cen.inv_fix + j) : 0u;
  }
  uint32_t* yb = y + b * y_stride + (static_cast<int64_t>(dg) * lout + o0 + t) * n + 4 * g;

  for (int it = 0; it < iters; ++it) {
    const int n0 = ((blockIdx.x * iters + it) * warps + warp) * kWarpCoeffs;
    if (n0 >= n) break;  // warp-uniform: the mma below needs the whole warp
    copy_async_wait<0>();  // this thread's copies of chunk `it`
    const uint4* buf = sStage + (it & 1) * (16 * lin);
    // v[r][h][e]: y_(4r+t) at coefficient n0 + 32 h + 4 g + e
    uint32_t v[R][2][4];
    uint32_t kq[2][4] = {};
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int j = 4 * r + t;
      if (j < lin) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint4 w4 = buf[(h * lin + j) * 8 + ((g + 2 * j) & 7)];
          v[r][h][0] = w4.x, v[r][h][1] = w4.y, v[r][h][2] = w4.z, v[r][h][3] = w4.w;
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            v[r][h][e] = mul_shoup(v[r][h][e], iw[r], iws[r], iq[r]);
            if (CENTERED) kq[h][e] += __umulhi(v[r][h][e], ifx[r]);  // wraps like crt's uint32 sum
          }
        }
      } else {
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int e = 0; e < 4; ++e) v[r][h][e] = 0u;
      }
    }
    stage_in(it + 1);  // into the other buffer, read by the previous iteration
    if (CENTERED) {  // the four lanes of a group hold the inputs of the same coefficients
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          kq[h][e] += __shfl_xor_sync(0xffffffffu, kq[h][e], 1);
          kq[h][e] += __shfl_xor_sync(0xffffffffu, kq[h][e], 2);
          kq[h][e] = (kq[h][e] + (1u << (cen.fix_bits - 1))) >> cen.fix_bits;
        }
#pragma unroll
      for (int r = 0; r < R; ++r)
        if (4 * r + t == lin) {
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int e = 0; e < 4; ++e) v[r][h][e] = kq[h][e];
        }
    }
    uint32_t* yo = yb + n0;
    // B fragments one group ahead (the last group re-reads its own)
    uint32_t bf[2][R], bf_next[2][R];
#pragma unroll
    for (int tr = 0; tr < 2 * R; ++tr) bf_next[tr / R][tr % R] = sFrag[tr * 32 + lane];
    for (int grp = 0; grp < groups; ++grp, yo += 4 * static_cast<int64_t>(n)) {
      const int ahead = min(grp + 1, groups - 1);
#pragma unroll
      for (int tr = 0; tr < 2 * R; ++tr) {
        bf[tr / R][tr % R] = bf_next[tr / R][tr % R];
        bf_next[tr / R][tr % R] = sFrag[(ahead * 2 * R + tr) * 32 + lane];
      }
      // tile m of half h: rows g and g + 8 are coefficients n0 + 32 h + 4 g + 2 m + {0, 1}. The
      // halves are finished one after the other (16 accumulators live, not 32), so one half's
      // reductions can overlap the other's mma.
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        int acc[2][2][4] = {};
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          const int e = 2 * m;
#pragma unroll
          for (int tau = 0; tau < 2; ++tau) {
#pragma unroll
            for (int s2 = 0; s2 < R / 2; ++s2)
              mma_u8_k32(acc[m][tau], v[2 * s2][h][e], v[2 * s2][h][e + 1], v[2 * s2 + 1][h][e],
                         v[2 * s2 + 1][h][e + 1], bf[tau][2 * s2], bf[tau][2 * s2 + 1]);
            if (R % 2) mma_u8_k16(acc[m][tau], v[R - 1][h][e], v[R - 1][h][e + 1], bf[tau][R - 1]);
          }
        }
        if (4 * grp + t < on) {
          const uint4 c = sConst[4 * grp + t];
          uint32_t out[4];
#pragma unroll
          for (int m = 0; m < 2; ++m)
#pragma unroll
            for (int rh = 0; rh < 2; ++rh) {  // row g (c0, c1) or g + 8 (c2, c3)
              const uint32_t s01 = static_cast<uint32_t>(acc[m][0][2 * rh]) + (static_cast<uint32_t>(acc[m][0][2 * rh + 1]) << 8);
              const uint32_t s23 = static_cast<uint32_t>(acc[m][1][2 * rh]) + (static_cast<uint32_t>(acc[m][1][2 * rh + 1]) << 8);
              const uint64_t sum = (static_cast<uint64_t>(s23) << 16) + s01;  // < 2^47
              out[2 * m + rh] = montgomery_reduce(static_cast<uint32_t>(sum), static_cast<uint32_t>(sum >> 32),
                                                  c.x, c.y, c.z, c.w);
            }
          VecIO<4>::store(yo + 32 * h, out);
        }
      }
    }
  }
}

static_assert(32 * kBconvMmaWarps <= kMmaMaxThreads, "the kernel's launch bounds");

template <int R, bool CENTERED>
void launch_mma(cudaStream_t stream, const BconvShape& s, const uint32_t* x, uint32_t* y,
                const uint32_t* in_c, const uint32_t* mat, const uint32_t* out_c, const Centering& cen) {
  const int n = static_cast<int>(s.in.n), lin = static_cast<int>(s.lin), lout = static_cast<int>(s.lout);
  const int digits = static_cast<int>(s.digits);
  constexpr int warps = kBconvMmaWarps;
  const int chunks = n / (warps * kWarpCoeffs);  // coefficients per block per iteration
  const int64_t rows = s.batch * s.digits;
  // blocks resident at once (two per SM at up to 128 registers; tuning.h)
  const int64_t slots = kBconvMmaBlocksPerSm * sm_count();
  // output groups of 4 split over blockIdx.z where the grid would not fill the GPU (each split
  // re-reads the inputs, from L2), and so that a block's tables fit in 48 KB
  // a group of 4 outputs: constants (16 + 4 bytes each) and B fragments; tables up to 32 KB
  const int total_groups = (lout + 3) / 4;
  const int group_bytes = 4 * (16 + 4) + 2 * R * 32 * 4;
  int splits = static_cast<int>(std::min<int64_t>(total_groups, std::max<int64_t>(1, (slots + chunks * rows - 1) / (chunks * rows))));
  splits = std::max(splits, (total_groups * group_bytes + (32 << 10) - 1) / (32 << 10));
  const int gpb = (total_groups + splits - 1) / splits;
  splits = (total_groups + gpb - 1) / gpb;
  // each block loops over `iters` chunks of warps x 64 coefficients: the table setup is paid once
  const int64_t want_x = std::max<int64_t>(1, (slots + rows * splits - 1) / (rows * splits));
  const int iters = static_cast<int>((chunks + std::min<int64_t>(chunks, want_x) - 1) / std::min<int64_t>(chunks, want_x));
  const int bx = (chunks + iters - 1) / iters;
  // plus two staging buffers of 2 x 64 coefficients x Lin words per warp (at most 64 KB)
  const size_t smem = static_cast<size_t>(gpb) * group_bytes + static_cast<size_t>(warps) * 2 * 256 * lin;
  auto kernel = bconv_mma_kernel<R, CENTERED>;
  // above 48 KB of dynamic shared memory a kernel must opt in, once per device
  static_assert(32 * 1024 + 8 * 2 * 256 * 16 <= 96 * 1024, "staging + tables within the opt-in");
  // (if that fails, the launch fails and the handler reports the error)
  if (smem > (48 << 10))
    per_device([&](int) -> int64_t {
      return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 << 10) == cudaSuccess;
    });
  const int64_t max_batch = 65535 / digits;
  for (int64_t b0 = 0; b0 < s.batch; b0 += max_batch) {
    const int64_t nb = std::min<int64_t>(max_batch, s.batch - b0);
    dim3 grid(bx, static_cast<unsigned>(nb * digits), splits);
    kernel<<<grid, 32 * warps, smem, stream>>>(
        x + b0 * s.in_stride(), y + b0 * s.out_stride(), lin, lout, n, s.in_stride(),
        s.out_stride(), digits, 4 * gpb, iters, in_c, mat, out_c, cen, s.dg);
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
  // Up to 16 inputs: tensor cores (exact for any table, so the folding schedule does not
  // apply). H200, 12 -> 48 at batch 16: 93-100 us against 149.5 for the SIMT kernel.
  if (cc_major() >= 8 && s.lin <= 16 && s.in.n % (kBconvMmaWarps * kWarpCoeffs) == 0) {
    auto mma_args = [&](auto launcher) { launcher(stream, s, x, y, in_c, mat, out_c, cen); };
    const int64_t inputs = s.lin + (CENTERED ? 1 : 0);  // centering adds k as an input
    if (inputs <= 4) mma_args(launch_mma<1, CENTERED>);
    else if (inputs <= 8) mma_args(launch_mma<2, CENTERED>);
    else if (inputs <= 12) mma_args(launch_mma<3, CENTERED>);
    else if (inputs <= 16) mma_args(launch_mma<4, CENTERED>);
    else if constexpr (CENTERED) mma_args(launch_mma<5, true>);  // 16 inputs + k
    return launch_status("bconv kernel");
  }
  // At 9..12 inputs: 4 coefficients per thread (80 registers) where the grid fills the GPU
  // without splitting the output limbs, else 2 (60 registers, so more warps per SM), and
  // kBconvOutsPerStep output limbs per step (tuning.h).
  const int64_t wide_blocks = (s.in.n + kThreads * 4 - 1) / (kThreads * 4) * s.batch * s.digits;
  const bool wide12 = wide_blocks >= kBconvWideMinBlocksPerSm * static_cast<int64_t>(sm_count());
  if (s.lin <= 4) args(launch<4, 4, CENTERED>);
  else if (s.lin <= 8) args(launch<8, 4, CENTERED>);
  else if (s.lin <= 12) {
    if (wide12)
      args(launch<12, 4, CENTERED, kBconvOutsPerStep>);
    else
      args(launch<12, 2, CENTERED, kBconvOutsPerStep>);
  }
  else if (s.lin <= 16) args(launch<16, 4, CENTERED>);
  else if constexpr (!CENTERED) {  // the centered handler's checks stop at 16 inputs
    if (s.lin <= 24) args(launch<24, 2, false>);
    else if (s.lin <= 32) args(launch<32, 1, false>);
    else if (s.lin <= 48) args(launch<48, 1, false>);
    else args(launch<64, 1, false>);
  }
  return launch_status("bconv kernel");
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
                          Centering{nullptr, nullptr, 1});  // s.dg: one conversion from limb 0
}

ffi::Error BconvCenteredCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                                 ffi::Buffer<ffi::U32> in_consts, ffi::Buffer<ffi::U32> mat,
                                 ffi::Buffer<ffi::U32> out_consts, ffi::Buffer<ffi::U32> inv_fix,
                                 ffi::Buffer<ffi::U32> src_prod, ffi::ResultBuffer<ffi::U32> y,
                                 int64_t fold_every, ffi::Span<const int64_t> starts,
                                 ffi::Span<const int64_t> fix_bits) {
  BconvShape s;
  if (auto e = check_bconv_centered_args(x.dimensions(), in_consts.dimensions(), mat.dimensions(),
                                         out_consts.dimensions(), inv_fix.dimensions(),
                                         src_prod.dimensions(), y->dimensions(), fold_every,
                                         starts, fix_bits, &s);
      e.failure())
    return e;
  return run_bconv<true>(stream, s, fold_every, x.typed_data(), y->typed_data(),
                         in_consts.typed_data(), mat.typed_data(), out_consts.typed_data(),
                         Centering{inv_fix.typed_data(), src_prod.typed_data(), 1});
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
                                  .Attr<ffi::Span<const int64_t>>("starts")     // [D]
                                  .Attr<ffi::Span<const int64_t>>("fix_bits"),  // [D]
                              {ffi::Traits::kCmdBufferCompatible});

}  // namespace jax_fhe
