// Fused modular GEMM on int8 tensor cores (semantics in modgemm_args.h), bit-identical to
// modgemm_cpu.cc.
//
// Both operands are balanced base-256 digits: H = sum_a 2^(8a) H_a (the precomputed planes) and
// R = sum_b 2^(8b) R_b (split here, in shared memory). The block keeps, for its output tile, seven
// int32 accumulators S_s = sum_{a+b=s} H_a R_b (mma.sync m16n8k32 s8, sm_80 and newer) and only
// at the end forms sum_s 2^(8s) S_s mod q. |S_s| <= 4 K 2^14 < q, so each S_s is one conditional
// add away from a residue. The XLA path (pir/modgemm.py) writes the 16 int32 plane products to
// memory and reads them back, which at VIPIR's packing shapes moves more bytes than the hint.
//
// Tiling: 8 warps per block; a warp owns 16 rows x (8 NT) columns of the output; the block is
// WM x WC warps (WM WC = 8). K advances in steps of 32: the block splits the rhs slice
// [32, C tile] into four int8 planes in shared memory ([plane][column][k], so a B fragment is
// one 32-bit load), each warp loads its A fragments (4 planes x 4 registers) straight from
// global memory (each row's 32 bytes are read once per block) and issues 16 NT mma.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common.h"
#include "modgemm_args.h"

namespace jax_fhe {

namespace {

constexpr int kWarps = 8;
constexpr int kKStep = 32;

__device__ __forceinline__ void mma_s8(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();
#endif
}

// Balanced digit b of a word below 2^29 (as in pir/db_gemm.byte_planes): byte b of
// x + 0x80808080, minus 128.
__device__ __forceinline__ int8_t balanced_digit(uint32_t x, int b) {
  const uint32_t z = x + 0x80808080u;
  return static_cast<int8_t>(static_cast<int>((z >> (8 * b)) & 0xFFu) - 128);
}

template <int NT, int WC>
__global__ void __launch_bounds__(kWarps * 32)
    modgemm_planes_kernel(const int8_t* __restrict__ lhs, const uint32_t* __restrict__ rhs,
                          const uint32_t* __restrict__ moduli, uint32_t* __restrict__ out, int M,
                          int K, int C) {
  constexpr int WM = kWarps / WC;
  constexpr int kTileM = 16 * WM;
  constexpr int kTileC = 8 * NT * WC;
  __shared__ __align__(16) int8_t sB[4][kTileC][kKStep];

  const int64_t b = blockIdx.z;
  const int m0 = blockIdx.x * kTileM, c0 = blockIdx.y * kTileC;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // mma groupID, threadID_in_group
  const int wm = warp / WC, wc = warp % WC;
  const int row0 = m0 + wm * 16 + g, row1 = row0 + 8;
  const int8_t* L = lhs + b * 4 * static_cast<int64_t>(M) * K;
  const uint32_t* Rb = rhs + b * static_cast<int64_t>(K) * C;

  int acc[7][NT][4];
#pragma unroll
  for (int s = 0; s < 7; ++s)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[s][j][e] = 0;

  for (int k0 = 0; k0 < K; k0 += kKStep) {
    // rhs slice [k0, k0 + 32) x [c0, c0 + kTileC) -> four int8 planes (zeros beyond K and C)
    for (int idx = threadIdx.x; idx < kKStep * kTileC; idx += kWarps * 32) {
      const int kk = idx / kTileC, cc = idx % kTileC;
      const int k = k0 + kk, c = c0 + cc;
      const uint32_t x = (k < K && c < C) ? Rb[static_cast<int64_t>(k) * C + c] : 0u;
#pragma unroll
      for (int p = 0; p < 4; ++p) sB[p][cc][kk] = balanced_digit(x, p);
    }
    __syncthreads();
    // A fragments: plane a, rows row0 / row1, k columns 4t.. and 16 + 4t.. (zeros beyond M, K;
    // K is a multiple of 4, so a 4-byte group is either all inside or all outside)
    uint32_t afr[4][4];
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      const int8_t* pa = L + static_cast<int64_t>(a) * M * K;
      const int ka = k0 + 4 * t, kb = ka + 16;
      auto ld = [&](int row, int k) -> uint32_t {
        return (row < M && k < K) ? *reinterpret_cast<const uint32_t*>(pa + static_cast<int64_t>(row) * K + k) : 0u;
      };
      afr[a][0] = ld(row0, ka);
      afr[a][1] = ld(row1, ka);
      afr[a][2] = ld(row0, kb);
      afr[a][3] = ld(row1, kb);
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int col = (wc * NT + j) * 8 + g;  // within the tile
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const uint32_t b0 = *reinterpret_cast<const uint32_t*>(&sB[p][col][4 * t]);
        const uint32_t b1 = *reinterpret_cast<const uint32_t*>(&sB[p][col][16 + 4 * t]);
#pragma unroll
        for (int a = 0; a < 4; ++a) mma_s8(acc[a + p][j], afr[a], b0, b1);
      }
    }
    __syncthreads();
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
      const int col = c0 + (wc * NT + j) * 8 + 2 * t + (e & 1);
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

template <int NT, int WC>
void launch(cudaStream_t stream, const ModGemmShape& s, const int8_t* lhs, const uint32_t* rhs,
            const uint32_t* moduli, uint32_t* out) {
  constexpr int kTileM = 16 * (kWarps / WC), kTileC = 8 * NT * WC;
  const int M = static_cast<int>(s.m), K = static_cast<int>(s.k), C = static_cast<int>(s.c);
  for (int64_t b0 = 0; b0 < s.batch; b0 += 65535) {
    const int64_t nb = std::min<int64_t>(65535, s.batch - b0);
    dim3 grid((M + kTileM - 1) / kTileM, (C + kTileC - 1) / kTileC, static_cast<unsigned>(nb));
    modgemm_planes_kernel<NT, WC><<<grid, kWarps * 32, 0, stream>>>(
        lhs + b0 * 4 * s.m * s.k, rhs + b0 * s.k * s.c, moduli + b0, out + b0 * s.m * s.c, M, K, C);
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
  if (s.c <= 8) args(launch<1, 1>);          // 128 x 8 tiles (batch-1 packing: C = 2)
  else if (s.c <= 16) args(launch<2, 1>);    // 128 x 16
  else if (s.c <= 32) args(launch<2, 2>);    // 64 x 32
  else args(launch<2, 4>);                   // 32 x 64 (C > 64: several column tiles)
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
