// Argument checks shared by the CPU and CUDA handlers of the fused modular GEMM
// (jax_fhe_mod_matmul_planes), the packing step of VIPIR's ExpPack.
//
// For every batch entry b (a (slot, limb) pair of the packing GEMM):
//   out[b, m, c] = sum_k H[b, m, k] * R[b, k, c]  mod q_b,
//   H[b, m, k]   = sum_{a<4} 2^(8a) lhs[b, a M + m, k]   (balanced byte planes, int8),
//   R[b, k, c]   = rhs_t[b, c, k]                         (uint32 words below 2^29; the rhs
//                                                          comes transposed, K-contiguous).
// The CUDA kernel splits R into balanced byte planes too and runs the 16 plane products on int8
// tensor cores, accumulating each shift s = a + b in int32 (exact while 4 K 2^14 < q_b, checked
// here), so the int32 plane products never reach memory (the XLA path, modgemm.mod_matmul,
// writes and re-reads them).
//
// lhs:    int8[..., 4 M, K]    rhs_t: uint32[..., C, K]    moduli: uint32[...] (one per entry)
// out:    uint32[..., M, C], canonical residues.
#pragma once

#include "common.h"

namespace jax_fhe {

struct ModGemmShape {
  int64_t batch = 0, m = 0, k = 0, c = 0;
};

inline ffi::Error check_modgemm_args(ffi::AnyBuffer::Dimensions lhs, ffi::AnyBuffer::Dimensions rhs,
                                     ffi::AnyBuffer::Dimensions moduli,
                                     ffi::AnyBuffer::Dimensions out, ModGemmShape* s) {
  if (lhs.size() < 2 || rhs.size() != lhs.size() || out.size() != lhs.size() ||
      moduli.size() != lhs.size() - 2)
    return ffi::Error::InvalidArgument(
        "mod_matmul_planes: expected lhs [..., 4M, K], rhs_t [..., C, K], moduli [...], out [..., M, C]");
  const size_t nb = lhs.size() - 2;
  s->batch = 1;
  for (size_t i = 0; i < nb; ++i) {
    if (rhs[i] != lhs[i] || out[i] != lhs[i] || moduli[i] != lhs[i])
      return ffi::Error::InvalidArgument("mod_matmul_planes: batch dimensions differ");
    s->batch *= lhs[i];
  }
  if (lhs[nb] % 4) return ffi::Error::InvalidArgument("mod_matmul_planes: lhs rows must be 4 M");
  s->m = lhs[nb] / 4;
  s->k = lhs[nb + 1];
  s->c = rhs[nb];
  if (rhs[nb + 1] != s->k) return ffi::Error::InvalidArgument("mod_matmul_planes: lhs and rhs K differ");
  if (s->k % 4) return ffi::Error::InvalidArgument("mod_matmul_planes: K must be a multiple of 4");
  if (out[nb] != s->m || out[nb + 1] != s->c)
    return ffi::Error::InvalidArgument("mod_matmul_planes: output shape mismatch");
  return ffi::Error::Success();
}

// Every modulus must exceed the largest |int32 shift sum| (4 K 2^14) and be below 2^29 (the
// balanced digits of a residue below 2^29 are its exact base-256 expansion).
inline ffi::Error check_modgemm_moduli(const uint32_t* q, int64_t count, int64_t k) {
  const uint64_t bound = 4ull * static_cast<uint64_t>(k) << 14;
  for (int64_t i = 0; i < count; ++i)
    if (q[i] <= bound || q[i] >= (1u << 29) || q[i] < 3)
      return ffi::Error::InvalidArgument(
          "mod_matmul_planes: every modulus must lie in (4 K 2^14, 2^29)");
  return ffi::Error::Success();
}

}  // namespace jax_fhe
