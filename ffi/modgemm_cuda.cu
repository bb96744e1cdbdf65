// Fused modular GEMM on int8 tensor cores (semantics in modgemm_args.h), bit-identical to
// modgemm_cpu.cc.
//
// Both operands are balanced base-256 digits: H = sum_a 2^(8a) H_a (the precomputed planes) and
// R = sum_b 2^(8b) R_b (split here, in registers). Each warp keeps, for its 16 x 8 NT output
// tile, seven int32 accumulators S_s = sum_{a+b=s} H_a R_b (mma.sync m16n8k32 s8, sm_80 and
// newer) and only at the end forms sum_s 2^(8s) S_s mod q. |S_s| <= 4 K 2^14 < q, so each S_s is
// one conditional add away from a residue. The XLA path (pir/modgemm.py) writes the 16 int32
// plane products to memory and reads them back, which at VIPIR's packing shapes moves more bytes
// than the hint.
//
// Layout: the rhs comes transposed, R^T [C, K], so that both operands are K-contiguous. The
// 32-wide K step is permuted the same way for both fragments (fragment k 4t..4t+3 and
// 16+4t..16+4t+3 of thread t are the physical k 8t..8t+7): a thread then reads 8 contiguous
// bytes of each plane row (two A registers) and 8 contiguous words of each rhs column (both B
// registers), and the sum over k is unchanged. The rhs words are split into the four planes with
// byte permutes. There is no shared memory and no barrier: warps are independent, the block
// groups WM x WC of them so that the warps sharing rows or columns hit each other's lines in
// L1. The next step's loads are issued before the current step's mma (register double
// buffering), which keeps loads in flight while the tensor cores work.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common.h"
#include "mma_device.cuh"
#include "modgemm_args.h"

namespace jax_fhe {

namespace {

constexpr int kKStep = 32;

// Plane p of four words below 2^29, packed as 4 int8 (word i in byte i): the balanced digit p of
// x is byte p of x + 0x80808080 minus 128, i.e. that byte XOR 0x80 (as in pir/db_gemm.byte_planes).
__device__ __forceinline__ void split4(const uint4& x, uint32_t (&planes)[4]) {
  const uint32_t z0 = x.x + 0x80808080u, z1 = x.y + 0x80808080u;
  const uint32_t z2 = x.z + 0x80808080u, z3 = x.w + 0x80808080u;
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    // bytes p of z0, z1 (selector: z0 is bytes 0-3, z1 bytes 4-7) and of z2, z3
    const uint32_t lo = __byte_perm(z0, z1, p | ((4 + p) << 4));
    const uint32_t hi = __byte_perm(z2, z3, p | ((4 + p) << 4));
    planes[p] = __byte_perm(lo, hi, 0x5410) ^ 0x80808080u;
  }
}

// One K step's raw operands of a thread: A = 4 planes x rows (g, g + 8) x 8 bytes, B = NT
// columns x 8 words. FULL: K % 32 == 0 and the row tiles are inside M (no K or row checks, and
// 8-byte plane loads); columns are always checked.
template <int NT>
struct StepRegs {
  uint2 a[4][2];
  uint4 b[NT][2];
};

template <int NT, bool FULL>
__device__ __forceinline__ void load_step(StepRegs<NT>& r, const int8_t* const (&arow)[4][2],
                                          const uint32_t* const (&bcol)[NT], int k, int K,
                                          bool row0_ok, bool row1_ok, const bool (&col_ok)[NT]) {
  // K is a multiple of 4, so each 4-byte / 4-word group is wholly inside or outside [0, K)
  const bool lo_ok = FULL || k < K, hi_ok = FULL || k + 4 < K;
#pragma unroll
  for (int a = 0; a < 4; ++a) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const bool row_ok = FULL || (h ? row1_ok : row0_ok);
      if (FULL) {
        r.a[a][h] = __ldg(reinterpret_cast<const uint2*>(arow[a][h] + k));
      } else {
        r.a[a][h].x = (row_ok && lo_ok) ? __ldg(reinterpret_cast<const uint32_t*>(arow[a][h] + k)) : 0u;
        r.a[a][h].y = (row_ok && hi_ok) ? __ldg(reinterpret_cast<const uint32_t*>(arow[a][h] + k + 4)) : 0u;
      }
    }
  }
  const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int j = 0; j < NT; ++j) {  // columns are always checked (batch-1 packing has C = 2)
    r.b[j][0] = (col_ok[j] && lo_ok) ? __ldg(reinterpret_cast<const uint4*>(bcol[j] + k)) : zero;
    r.b[j][1] = (col_ok[j] && hi_ok) ? __ldg(reinterpret_cast<const uint4*>(bcol[j] + k + 4)) : zero;
  }
}

template <int NT>
__device__ __forceinline__ void mma_step(int (&acc)[7][NT][4], const StepRegs<NT>& r) {
  uint32_t afr[4][4];
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    afr[a][0] = r.a[a][0].x;  // row g,     fragment k 4t..   (physical 8t..)
    afr[a][1] = r.a[a][1].x;  // row g + 8, fragment k 4t..
    afr[a][2] = r.a[a][0].y;  // row g,     fragment k 16+4t.. (physical 8t+4..)
    afr[a][3] = r.a[a][1].y;  // row g + 8, fragment k 16+4t..
  }
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    uint32_t b0[4], b1[4];
    split4(r.b[j][0], b0);
    split4(r.b[j][1], b1);
#pragma unroll
    for (int p = 0; p < 4; ++p)
#pragma unroll
      for (int a = 0; a < 4; ++a) mma_s8_k32(acc[a + p][j], afr[a], b0[p], b1[p]);
  }
}

// PREFETCH: issue the next K step's loads before this step's mma (needs about twice the operand
// registers; used where the accumulators leave room, NT = 1).
template <int NT, int WM, int WC, bool FULL>
__global__ void __launch_bounds__(WM * WC * 32, 2)
    modgemm_planes_kernel(const int8_t* __restrict__ lhs, const uint32_t* __restrict__ rhs_t,
                          const uint32_t* __restrict__ moduli, uint32_t* __restrict__ out, int M,
                          int K, int C) {
  constexpr int kTileM = 16 * WM;
  constexpr int kTileC = 8 * NT * WC;
  constexpr bool PREFETCH = NT == 1;
  const int64_t b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // mma groupID, threadID_in_group
  const int wm = warp / WC, wc = warp % WC;
  const int row0 = blockIdx.x * kTileM + wm * 16 + g, row1 = row0 + 8;
  const int col_base = blockIdx.y * kTileC + wc * 8 * NT;
  const int8_t* L = lhs + b * 4 * static_cast<int64_t>(M) * K;
  const uint32_t* Rt = rhs_t + b * static_cast<int64_t>(C) * K;
  const bool row0_ok = row0 < M, row1_ok = row1 < M;
  const int8_t* arow[4][2];
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    arow[a][0] = L + (static_cast<int64_t>(a) * M + (row0_ok ? row0 : 0)) * K + 8 * t;
    arow[a][1] = L + (static_cast<int64_t>(a) * M + (row1_ok ? row1 : 0)) * K + 8 * t;
  }
  const uint32_t* bcol[NT];
  bool col_ok[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int col = col_base + j * 8 + g;
    col_ok[j] = col < C;
    bcol[j] = Rt + static_cast<int64_t>(col_ok[j] ? col : 0) * K + 8 * t;
  }

  int acc[7][NT][4];
#pragma unroll
  for (int s = 0; s < 7; ++s)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[s][j][e] = 0;

  // k below is relative to the thread's 8 t offset; the bounds checks add it back
  const int Kt = K - 8 * t;
  if (PREFETCH) {
    StepRegs<NT> cur, nxt;
    load_step<NT, FULL>(cur, arow, bcol, 0, Kt, row0_ok, row1_ok, col_ok);
#pragma unroll 2
    for (int k0 = 0; k0 < K; k0 += kKStep) {
      if (k0 + kKStep < K) load_step<NT, FULL>(nxt, arow, bcol, k0 + kKStep, Kt, row0_ok, row1_ok, col_ok);
      mma_step<NT>(acc, cur);
      cur = nxt;
    }
  } else {
    for (int k0 = 0; k0 < K; k0 += kKStep) {
      StepRegs<NT> cur;
      load_step<NT, FULL>(cur, arow, bcol, k0, Kt, row0_ok, row1_ok, col_ok);
      mma_step<NT>(acc, cur);
    }
  }

  // sum_s 2^(8s) S_s mod q: S_s + q in [0, 2q) -> canonical; products below 2^58, 7 of them
  // below 2^61
  const uint64_t q = moduli[b];
  uint64_t w[7];
  w[0] = 1;
#pragma unroll
  for (int s = 1; s < 7; ++s) w[s] = (w[s - 1] << 8) % q;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = e < 2 ? row0 : row1;
      const int col = col_base + j * 8 + 2 * t + (e & 1);
      if (row >= M || col >= C) continue;
      uint64_t sum = 0;
#pragma unroll
      for (int s = 0; s < 7; ++s) {
        const int64_t v = acc[s][j][e];
        const uint64_t r = static_cast<uint64_t>(v < 0 ? v + static_cast<int64_t>(q) : v);
        sum += r * w[s];
      }
      out[(b * M + row) * static_cast<int64_t>(C) + col] = static_cast<uint32_t>(sum % q);
    }
  }
}

template <int NT, int WM, int WC>
void launch(cudaStream_t stream, const ModGemmShape& s, const int8_t* lhs, const uint32_t* rhs_t,
            const uint32_t* moduli, uint32_t* out) {
  constexpr int kTileM = 16 * WM, kTileC = 8 * NT * WC;
  const int M = static_cast<int>(s.m), K = static_cast<int>(s.k), C = static_cast<int>(s.c);
  // the unchecked kernel needs whole K steps, whole row tiles and 16-byte aligned operands
  const bool full = K % kKStep == 0 && M % kTileM == 0 &&
                    reinterpret_cast<uintptr_t>(lhs) % 16 == 0 &&
                    reinterpret_cast<uintptr_t>(rhs_t) % 16 == 0;
  for (int64_t b0 = 0; b0 < s.batch; b0 += 65535) {
    const int64_t nb = std::min<int64_t>(65535, s.batch - b0);
    dim3 grid((M + kTileM - 1) / kTileM, (C + kTileC - 1) / kTileC, static_cast<unsigned>(nb));
    const int8_t* l = lhs + b0 * 4 * s.m * s.k;
    const uint32_t* r = rhs_t + b0 * s.k * s.c;
    if (full)
      modgemm_planes_kernel<NT, WM, WC, true><<<grid, WM * WC * 32, 0, stream>>>(
          l, r, moduli + b0, out + b0 * s.m * s.c, M, K, C);
    else
      modgemm_planes_kernel<NT, WM, WC, false><<<grid, WM * WC * 32, 0, stream>>>(
          l, r, moduli + b0, out + b0 * s.m * s.c, M, K, C);
  }
}

ffi::Error ModMatmulPlanesCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::S8> lhs,
                                   ffi::Buffer<ffi::U32> rhs, ffi::Buffer<ffi::U32> moduli,
                                   ffi::ResultBuffer<ffi::U32> out) {
  ModGemmShape s;
  if (auto e = check_modgemm_args(lhs.dimensions(), rhs.dimensions(), moduli.dimensions(),
                                  out->dimensions(), &s);
      e.failure())
    return e;
  if (s.batch == 0 || s.m == 0 || s.c == 0) return ffi::Error::Success();
  if (s.m > (1 << 30) / 4 || s.k > (1 << 15) || s.c > (1 << 30))
    return ffi::Error::InvalidArgument("mod_matmul_planes: M, K or C too large");
  // the moduli are device data: their range (checked by the CPU handler) is the caller's
  // contract here (pir/modgemm.py checks the static primes before calling)
  auto args = [&](auto fn) {
    fn(stream, s, lhs.typed_data(), rhs.typed_data(), moduli.typed_data(), out->typed_data());
  };
  if (s.c <= 8) args(launch<1, 8, 1>);          // 128 x 8 tiles (batch-1 packing: C = 2)
  else if (s.c <= 16) args(launch<2, 8, 1>);    // 128 x 16
  else if (s.c <= 32) args(launch<2, 4, 2>);    // 64 x 32
  else args(launch<2, 2, 4>);                   // 32 x 64 (C > 64: several column tiles)
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return ffi::Error::Internal(std::string("mod_matmul_planes launch failed: ") + cudaGetErrorString(err));
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(ModMatmulPlanesCuda, ModMatmulPlanesCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::S8>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>(),
                              {ffi::Traits::kCmdBufferCompatible});

}  // namespace jax_fhe
