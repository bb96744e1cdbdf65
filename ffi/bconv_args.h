// Argument checks shared by the CPU and CUDA base-conversion handlers.
//
// BConv from basis {q_j} (Lin limbs) to basis {p_i} (Lout limbs):
//   y_j    = x_j * pre_j mod q_j                 (pre_j = (Q/q_j)^-1 mod q_j for the CRT form)
//   out_i  = sum_j y_j * mat[i][j]  mod p_i      (mat[i][j] = (Q/q_j) mod p_i)
// The sum is accumulated in 64 bits. When sum_j mat[i][j] * q_j < 2^64 for every row
// (checked when the table is built) no intermediate reduction is needed: fold_every >= Lin.
// Otherwise the accumulator is reduced after every `fold_every` terms.
//
// in_consts:  uint32[3, Lin]  rows: q_j, pre_j, Shoup(pre_j)
// mat:        uint32[Lout, Lin]
// out_consts: uint32[4, Lout] rows: p_i, 2^32 mod p_i, Shoup(2^32 mod p_i), Shoup(1)
//
// The centered conversion (jax_fhe_bconv_centered; jax_fhe.rlwe.hybrid.exact_conv, fused): with
// the BConv above, y_j = x_j * (Q/q_j)^-1 mod q_j and raw_i = sum_j y_j * mat[i][j] mod p_i,
//   k     = (sum_j mulhi32(y_j, inv_fix_j) + 2^(F-1)) >> F     (uint32, F = fix_bits)
//   out_i = (raw_i - k * src_prod_i) mod p_i                    (canonical)
// i.e. the fast conversion minus round(sum_j y_j / q_j) Q, with the fixed-point quotient of
// jax_fhe/rlwe/crt.py (inv_fix_j = floor(2^(32+F) / q_j)): the same bits on every backend.
//
// inv_fix:  uint32[Lin]
// src_prod: uint32[Lout]  Q mod p_i
// starts, fix_bits (D entries each): the call makes D conversions (ModUp of D digits in one
// launch; D = 1 for one conversion). The tables hold them stacked along their first axis
// (in_consts [D * 3, Lin], mat [D * Lout, Lin], out_consts [D * 4, Lout], inv_fix [D * Lin],
// src_prod [D * Lout]); conversion d reads input limbs [starts[d], starts[d] + Lin) of x, which
// may hold more (ModUp converts each digit straight from the INTT of all the basis limbs), with
// fixed-point precision fix_bits[d], and writes limbs [d Lout, (d + 1) Lout) of y = [..., D Lout, N].
// Digits of different sizes share one launch padded (jax_fhe.ops.stack_centered): a padded
// input has zero table entries (pre_j = 0, inv_fix_j = 0, mat column 0) and a padded output a
// zero table row and src_prod 0, so it reads a neighbour's limb without effect and writes zeros.
#pragma once

#include <string>

#include "common.h"

namespace jax_fhe {

constexpr int64_t kMaxBconvInLimbs = 64;
constexpr int kMaxBconvDigits = 64;  // conversions in one centered call

// Each conversion's first input limb and fixed-point precision (the centered call's `starts`
// and `fix_bits`); one conversion from limb 0 for the plain call. Passed to kernels by value.
struct BconvDigits {
  int32_t start[kMaxBconvDigits];
  int32_t fix_bits[kMaxBconvDigits];
};

struct BconvShape {
  PolyShape in;
  int64_t lin = 0, lout = 0, batch = 0;
  int64_t digits = 1;  // conversions in the call
  BconvDigits dg{};    // start[0] = 0: the plain conversion reads limbs [0, lin)
  int64_t in_stride() const { return in.limbs * in.n; }  // words between batch entries
  int64_t out_stride() const { return digits * lout * in.n; }
};

// lin_table < 0: the conversion reads every input limb; otherwise lin_table limbs from each
// conversion's start (s->digits and s->dg set by the caller; the count the tables are checked
// against).
inline ffi::Error check_bconv_args(ffi::AnyBuffer::Dimensions x, ffi::AnyBuffer::Dimensions in_c,
                                   ffi::AnyBuffer::Dimensions mat, ffi::AnyBuffer::Dimensions out_c,
                                   ffi::AnyBuffer::Dimensions y, int64_t fold_every,
                                   BconvShape* s, int64_t lin_table = -1) {
  if (auto e = decode_poly_shape(x, "bconv input", &s->in); e.failure()) return e;
  s->lin = lin_table < 0 ? s->in.limbs : lin_table;
  s->batch = s->in.polys / (s->in.limbs > 0 ? s->in.limbs : 1);
  const int64_t digits = s->digits;
  if (s->lin < 1 || s->lin > kMaxBconvInLimbs)
    return ffi::Error::InvalidArgument("bconv: input limb count must be in [1, 64]");
  for (int64_t d = 0; d < digits; ++d) {
    const int64_t a = s->dg.start[d];
    if (a < 0 || a + s->lin > s->in.limbs)
      return ffi::Error::InvalidArgument("bconv_centered: limbs [" + std::to_string(a) + ", " +
                                         std::to_string(a + s->lin) + ") are not all in the "
                                         "input's " + std::to_string(s->in.limbs) + " limbs");
  }
  if (y.size() != x.size()) return ffi::Error::InvalidArgument("bconv: output rank mismatch");
  if (y[y.size() - 2] % digits != 0)
    return ffi::Error::InvalidArgument("bconv_centered: the output limbs must be digits * Lout");
  s->lout = y[y.size() - 2] / digits;
  for (size_t i = 0; i < x.size(); ++i)
    if (i != x.size() - 2 && y[i] != x[i])
      return ffi::Error::InvalidArgument("bconv: output shape mismatch");
  if (auto e = expect_count(in_c, 2, digits * 3 * s->lin, "bconv input constants"); e.failure()) return e;
  if (auto e = expect_count(mat, 2, digits * s->lout * s->lin, "bconv matrix"); e.failure()) return e;
  if (auto e = expect_count(out_c, 2, digits * 4 * s->lout, "bconv output constants"); e.failure())
    return e;
  if (fold_every < 1) return ffi::Error::InvalidArgument("bconv: fold_every must be >= 1");
  return ffi::Error::Success();
}

// The fixed-point terms are below 2^28 each, so up to 16 of them sum within a word.
constexpr int64_t kMaxCenteredInLimbs = 16;

inline ffi::Error check_bconv_centered_args(
    ffi::AnyBuffer::Dimensions x, ffi::AnyBuffer::Dimensions in_c, ffi::AnyBuffer::Dimensions mat,
    ffi::AnyBuffer::Dimensions out_c, ffi::AnyBuffer::Dimensions inv_fix,
    ffi::AnyBuffer::Dimensions src_prod, ffi::AnyBuffer::Dimensions y, int64_t fold_every,
    ffi::Span<const int64_t> starts, ffi::Span<const int64_t> fix_bits, BconvShape* s) {
  const int64_t digits = static_cast<int64_t>(starts.size());
  if (digits < 1 || digits > kMaxBconvDigits)
    return ffi::Error::InvalidArgument("bconv_centered: starts must name 1 to 64 conversions, got " +
                                       std::to_string(digits));
  if (static_cast<int64_t>(fix_bits.size()) != digits)
    return ffi::Error::InvalidArgument("bconv_centered: fix_bits must have one entry per start (" +
                                       std::to_string(digits) + "), got " + std::to_string(fix_bits.size()));
  s->digits = digits;
  for (int64_t d = 0; d < digits; ++d) {
    if (fix_bits[d] < 1 || fix_bits[d] > 28)
      return ffi::Error::InvalidArgument("bconv_centered: fix_bits must be in [1, 28], got " +
                                         std::to_string(fix_bits[d]));
    if (starts[d] < 0 || starts[d] > (int64_t{1} << 30))
      return ffi::Error::InvalidArgument("bconv_centered: a start is out of range: " + std::to_string(starts[d]));
    s->dg.start[d] = static_cast<int32_t>(starts[d]);
    s->dg.fix_bits[d] = static_cast<int32_t>(fix_bits[d]);
  }
  // the source limb count is the tables' (in_consts holds three rows of one entry per limb)
  int64_t lin3 = 0;
  if (auto e = table_size(in_c, 2, "bconv input constants", &lin3); e.failure()) return e;
  if (lin3 % (3 * digits) != 0)
    return ffi::Error::InvalidArgument("bconv_centered: input constants must be [digits, 3, Lin]");
  const int64_t lin = lin3 / (3 * digits);
  if (auto e = check_bconv_args(x, in_c, mat, out_c, y, fold_every, s, lin); e.failure()) return e;
  if (s->lin > kMaxCenteredInLimbs)
    return ffi::Error::InvalidArgument(
        "bconv_centered: input limb count must be in [1, 16] (the fixed-point quotient sums "
        "at most 16 terms in 32 bits), got " + std::to_string(s->lin));
  if (auto e = expect_count(inv_fix, 1, digits * s->lin, "bconv_centered inv_fix"); e.failure()) return e;
  if (auto e = expect_count(src_prod, 1, digits * s->lout, "bconv_centered src_prod"); e.failure())
    return e;
  return ffi::Error::Success();
}

}  // namespace jax_fhe
