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
// limb_offset: the conversion reads input limbs [limb_offset, limb_offset + Lin) of x, which
// may hold more (ModUp converts each digit straight from the INTT of all the basis limbs).
// digits = D > 1 (ModUp of D digits in one launch): D conversions of Lin_d -> Lout_d limbs
// (attributes digit_lin, digit_lout: int64[D]; one conversion: [Lin], [Lout]) whose tables
// sit one after the other, each in the layout above: in_consts holds [3, Lin_d] blocks
// (3 sum Lin_d words), mat [Lout_d, Lin_d] blocks, out_consts [4, Lout_d] blocks, inv_fix
// [Lin_d] and src_prod [Lout_d] blocks. Conversion d reads the input limbs [limb_offset + X_d,
// limb_offset + X_d + Lin_d) and writes the output limbs [Y_d, Y_d + Lout_d) of
// y = [..., sum Lout_d, N], with X_d = sum_{e<d} Lin_e and Y_d = sum_{e<d} Lout_e (the digits
// sit back to back in x, and their conversions in y). BconvDigits is that plan.
#pragma once

#include <algorithm>
#include <string>

#include "common.h"

namespace jax_fhe {

constexpr int64_t kMaxBconvInLimbs = 64;
constexpr int kMaxBconvDigits = 16;

// The conversions of one launch (bconv_args.h's header): per conversion d its source and
// target limb counts, X_d (its first input limb after the offset, also its inv_fix block and
// a third of its in_consts block), Y_d (its first output limb, its src_prod block and a
// quarter of its out_consts block) and the offset of its mat block. Passed by value to the
// CUDA kernels.
struct BconvDigits {
  int count = 1;
  int lin[kMaxBconvDigits] = {}, lout[kMaxBconvDigits] = {};
  int x_off[kMaxBconvDigits] = {}, y_off[kMaxBconvDigits] = {};
  int64_t mat_off[kMaxBconvDigits] = {};
};

// The conversion reads limbs [offset, offset + total_lin) of each batch entry's in.limbs input
// limbs (the centered conversion's limb_offset; the plain conversion reads all of them). lin and
// lout are the largest conversion's counts (they size the kernels), total_* the sums.
struct BconvShape {
  PolyShape in;
  int64_t lin = 0, lout = 0, batch = 0, offset = 0;
  int64_t digits = 1;  // conversions in the call (the centered conversion's `digits`)
  int64_t total_lin = 0, total_lout = 0, total_mat = 0;
  BconvDigits plan;
  int64_t in_stride() const { return in.limbs * in.n; }  // words between batch entries
  int64_t out_stride() const { return total_lout * in.n; }
};

// Fills s->plan (and the maxima and totals) from the per-conversion limb counts.
inline ffi::Error make_bconv_digits(ffi::Span<const int64_t> lin, ffi::Span<const int64_t> lout,
                                    BconvShape* s) {
  const int64_t d = static_cast<int64_t>(lin.size());
  if (d < 1 || d > kMaxBconvDigits || static_cast<int64_t>(lout.size()) != d)
    return ffi::Error::InvalidArgument("bconv_centered: digit_lin and digit_lout must hold 1 to " +
                                       std::to_string(kMaxBconvDigits) + " counts each, as many as digits");
  s->digits = d;
  s->plan.count = static_cast<int>(d);
  s->lin = s->lout = s->total_lin = s->total_lout = s->total_mat = 0;
  for (int64_t i = 0; i < d; ++i) {
    if (lin[i] < 1 || lin[i] > kMaxBconvInLimbs || lout[i] < 0 || lout[i] > (int64_t{1} << 20))
      return ffi::Error::InvalidArgument("bconv_centered: conversion " + std::to_string(i) +
                                         " has an input limb count outside [1, 64] or a bad output count");
    s->plan.lin[i] = static_cast<int>(lin[i]);
    s->plan.lout[i] = static_cast<int>(lout[i]);
    s->plan.x_off[i] = static_cast<int>(s->total_lin);
    s->plan.y_off[i] = static_cast<int>(s->total_lout);
    s->plan.mat_off[i] = s->total_mat;
    s->total_lin += lin[i];
    s->total_lout += lout[i];
    s->total_mat += lin[i] * lout[i];
    s->lin = std::max(s->lin, lin[i]);
    s->lout = std::max(s->lout, lout[i]);
  }
  return ffi::Error::Success();
}

// The shapes of data and tables against s->plan (set by make_bconv_digits, or one conversion of
// every input limb for the plain conversion: lin_table < 0), the input limbs read starting at
// `offset`.
inline ffi::Error check_bconv_args(ffi::AnyBuffer::Dimensions x, ffi::AnyBuffer::Dimensions in_c,
                                   ffi::AnyBuffer::Dimensions mat, ffi::AnyBuffer::Dimensions out_c,
                                   ffi::AnyBuffer::Dimensions y, int64_t fold_every,
                                   BconvShape* s, bool planned = false, int64_t offset = 0) {
  if (auto e = decode_poly_shape(x, "bconv input", &s->in); e.failure()) return e;
  if (y.size() != x.size()) return ffi::Error::InvalidArgument("bconv: output rank mismatch");
  if (!planned) {  // the plain conversion: all input limbs to all output limbs
    const int64_t lin = s->in.limbs, lout = y[y.size() - 2];
    if (lin < 1 || lin > kMaxBconvInLimbs)
      return ffi::Error::InvalidArgument("bconv: input limb count must be in [1, 64]");
    const int64_t one_in[1] = {lin}, one_out[1] = {lout};
    if (auto e = make_bconv_digits(ffi::Span<const int64_t>(one_in, 1), ffi::Span<const int64_t>(one_out, 1), s);
        e.failure())
      return e;
  }
  s->offset = offset;
  s->batch = s->in.polys / (s->in.limbs > 0 ? s->in.limbs : 1);
  if (offset < 0 || offset + s->total_lin > s->in.limbs)
    return ffi::Error::InvalidArgument("bconv_centered: limbs [" + std::to_string(offset) + ", " +
                                       std::to_string(offset + s->total_lin) + ") are not all in the "
                                       "input's " + std::to_string(s->in.limbs) + " limbs");
  if (y[y.size() - 2] != s->total_lout)
    return ffi::Error::InvalidArgument("bconv_centered: the output must have " + std::to_string(s->total_lout) +
                                       " limbs (the conversions' output counts summed), got " +
                                       std::to_string(y[y.size() - 2]));
  for (size_t i = 0; i < x.size(); ++i)
    if (i != x.size() - 2 && y[i] != x[i])
      return ffi::Error::InvalidArgument("bconv: output shape mismatch");
  if (auto e = expect_count(in_c, 2, 3 * s->total_lin, "bconv input constants"); e.failure()) return e;
  if (auto e = expect_count(mat, 2, s->total_mat, "bconv matrix"); e.failure()) return e;
  if (auto e = expect_count(out_c, 2, 4 * s->total_lout, "bconv output constants"); e.failure())
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
    int64_t fix_bits, int64_t limb_offset, int64_t digits, ffi::Span<const int64_t> digit_lin,
    ffi::Span<const int64_t> digit_lout, BconvShape* s) {
  if (digits < 1 || digits > kMaxBconvDigits || static_cast<int64_t>(digit_lin.size()) != digits)
    return ffi::Error::InvalidArgument("bconv_centered: digits must be in [1, " + std::to_string(kMaxBconvDigits) +
                                       "] and digit_lin must hold that many counts, got " + std::to_string(digits) +
                                       " and " + std::to_string(digit_lin.size()));
  if (auto e = make_bconv_digits(digit_lin, digit_lout, s); e.failure()) return e;
  if (auto e = check_bconv_args(x, in_c, mat, out_c, y, fold_every, s, true, limb_offset); e.failure())
    return e;
  if (s->lin > kMaxCenteredInLimbs)
    return ffi::Error::InvalidArgument(
        "bconv_centered: input limb count must be in [1, 16] (the fixed-point quotient sums "
        "at most 16 terms in 32 bits), got " + std::to_string(s->lin));
  if (fix_bits < 1 || fix_bits > 28)
    return ffi::Error::InvalidArgument("bconv_centered: fix_bits must be in [1, 28], got " +
                                       std::to_string(fix_bits));
  if (auto e = expect_count(inv_fix, 1, s->total_lin, "bconv_centered inv_fix"); e.failure()) return e;
  if (auto e = expect_count(src_prod, 1, s->total_lout, "bconv_centered src_prod"); e.failure())
    return e;
  return ffi::Error::Success();
}

}  // namespace jax_fhe
