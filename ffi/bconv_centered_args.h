// Argument checks shared by the CPU and CUDA centered base-conversion handlers.
//
// The centered conversion (jax_fhe.rlwe.hybrid.exact_conv, fused): with the BConv of
// bconv_args.h, y_j = x_j * (Q/q_j)^-1 mod q_j and raw_i = sum_j y_j * mat[i][j] mod p_i,
//   k     = (sum_j mulhi32(y_j, inv_fix_j) + 2^(F-1)) >> F     (uint32, F = fix_bits)
//   out_i = (raw_i - k * src_prod_i) mod p_i                    (canonical)
// i.e. the fast conversion minus round(sum_j y_j / q_j) Q, with the fixed-point quotient of
// jax_fhe/rlwe/crt.py (inv_fix_j = floor(2^(32+F) / q_j)): the same bits on every backend.
//
// inv_fix:  uint32[Lin]
// src_prod: uint32[Lout]  Q mod p_i
#pragma once

#include "bconv_args.h"
#include "common.h"

namespace jax_fhe {

// The fixed-point terms are below 2^28 each, so up to 16 of them sum within a word.
constexpr int64_t kMaxCenteredInLimbs = 16;

inline ffi::Error check_bconv_centered_args(
    ffi::AnyBuffer::Dimensions x, ffi::AnyBuffer::Dimensions in_c, ffi::AnyBuffer::Dimensions mat,
    ffi::AnyBuffer::Dimensions out_c, ffi::AnyBuffer::Dimensions inv_fix,
    ffi::AnyBuffer::Dimensions src_prod, ffi::AnyBuffer::Dimensions y, int64_t fold_every,
    int64_t fix_bits, BconvShape* s) {
  if (auto e = check_bconv_args(x, in_c, mat, out_c, y, fold_every, s); e.failure()) return e;
  if (s->lin > kMaxCenteredInLimbs)
    return ffi::Error::InvalidArgument(
        "bconv_centered: input limb count must be in [1, 16] (the fixed-point quotient sums "
        "at most 16 terms in 32 bits), got " + std::to_string(s->lin));
  if (fix_bits < 1 || fix_bits > 28)
    return ffi::Error::InvalidArgument("bconv_centered: fix_bits must be in [1, 28], got " +
                                       std::to_string(fix_bits));
  if (auto e = expect_count(inv_fix, 1, s->lin, "bconv_centered inv_fix"); e.failure()) return e;
  if (auto e = expect_count(src_prod, 1, s->lout, "bconv_centered src_prod"); e.failure()) return e;
  return ffi::Error::Success();
}

}  // namespace jax_fhe
