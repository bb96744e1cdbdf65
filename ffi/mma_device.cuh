// Integer tensor-core multiply-accumulate (mma.sync, sm_80 and newer), shared by the kernels
// that run modular products on int8 tensor cores (modgemm_cuda.cu, bconv_cuda.cu).
//
// Fragment layout (PTX ISA, m16n8k32 / m16n8k16 with 8-bit operands): g = lane / 4 (groupID),
// t = lane % 4. Each 32-bit register packs four consecutive k elements, element 0 in the low byte.
//   A (16 x K, row-major): a0 = row g, k 4t..4t+3; a1 = row g + 8, k 4t..4t+3;
//                          k32 only: a2 = row g, k 16+4t..; a3 = row g + 8, k 16+4t..
//   B (K x 8, col-major):  b0 = k 4t..4t+3, column g; k32 only: b1 = k 16+4t.., column g
//   C (16 x 8, int32):     c0, c1 = row g, columns 2t, 2t+1; c2, c3 = row g + 8, same columns
#pragma once

#include <cstdint>

namespace jax_fhe {

__device__ __forceinline__ void mma_s8_k32(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
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

__device__ __forceinline__ void mma_u8_k32(int (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                           uint32_t a3, uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  __trap();
#endif
}

__device__ __forceinline__ void mma_u8_k16(int (&d)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.s32.u8.u8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a0), "r"(a1), "r"(b0));
#else
  __trap();
#endif
}

}  // namespace jax_fhe
