// Argument checks shared by the CPU and CUDA tensor-product handlers.
//
// x, y: uint32[..., 2, L, N] (degree-1 ciphertexts, NTT domain); out: uint32[..., 3, L, N] with
// out = (x0 y0, x0 y1 + x1 y0, x1 y1) mod q. Each batch axis of x and y is the output's or 1
// (jax.vmap's expand_dims leaves an unbatched operand with axes of size 1): broadcast.
#pragma once

#include <string>

#include "common.h"
#include "modarith.h"

namespace jax_fhe {

constexpr int kMaxTensorBatchAxes = 8;

struct TensorShape {
  int64_t batch = 0;   // prod(out's leading axes)
  int64_t limbs = 0;   // L
  int64_t n = 0;       // N
  int log_n = 0;
  // Where batch entry b of the output reads x and y: with `flat`, at b * x_flat (0: shared, 2 L N:
  // x has the output's batch axes), likewise y; otherwise (x and y batched over different axes,
  // as nested vmaps give) through the per-axis strides below (0 on a broadcast axis).
  bool flat = true;
  int64_t x_flat = 0, y_flat = 0;
  int axes = 0;
  int64_t dims[kMaxTensorBatchAxes] = {}, x_stride[kMaxTensorBatchAxes] = {},
          y_stride[kMaxTensorBatchAxes] = {};
};

// Offset of batch entry b's [2, L, N] block in x (or y: pass its strides) in the general case.
FHE_HD int64_t tensor_batch_offset(int64_t b, int axes, const int64_t* dims, const int64_t* stride) {
  int64_t off = 0;
  for (int i = axes - 1; i >= 0; --i) {
    off += (b % dims[i]) * stride[i];
    b /= dims[i];
  }
  return off;
}

// One operand's batch axes against the output's: each axis is the output's or 1 (broadcast).
inline ffi::Error check_tensor_operand(const ffi::AnyBuffer::Dimensions& d,
                                       const ffi::AnyBuffer::Dimensions& out, const char* what,
                                       int64_t block, int64_t* flat, int64_t* stride, bool* is_flat) {
  if (d.size() != out.size())
    return ffi::Error::InvalidArgument(std::string("tensor_product: ") + what + " has rank " +
                                       std::to_string(d.size()) + ", the output " +
                                       std::to_string(out.size()));
  const size_t r = d.size();
  if (d[r - 3] != 2 || d[r - 2] != out[r - 2] || d[r - 1] != out[r - 1])
    return ffi::Error::InvalidArgument(std::string("tensor_product: ") + what +
                                       " must be [..., 2, L, N] with the output's L and N");
  bool ones = true, same = true;
  int64_t step = block;   // elements per batch entry of this operand, growing outwards
  for (size_t i = r - 3; i-- > 0;) {
    if (d[i] != 1 && d[i] != out[i])
      return ffi::Error::InvalidArgument(std::string("tensor_product: ") + what + "'s batch axis " +
                                         std::to_string(i) + " (" + std::to_string(d[i]) +
                                         ") is neither the output's nor 1");
    ones = ones && d[i] == 1;
    same = same && d[i] == out[i];
    stride[i] = d[i] == 1 ? 0 : step;
    step *= d[i];
  }
  *flat = ones ? 0 : block;
  *is_flat = ones || same;
  return ffi::Error::Success();
}

inline ffi::Error check_tensor_args(ffi::AnyBuffer::Dimensions x, ffi::AnyBuffer::Dimensions y,
                                    ffi::AnyBuffer::Dimensions out,
                                    ffi::AnyBuffer::Dimensions moduli,
                                    ffi::AnyBuffer::Dimensions neg_qinv,
                                    ffi::AnyBuffer::Dimensions r2, TensorShape* s) {
  if (out.size() < 3 || out[out.size() - 3] != 3)
    return ffi::Error::InvalidArgument("tensor_product: the output must be [..., 3, L, N]");
  if (out.size() - 3 > static_cast<size_t>(kMaxTensorBatchAxes))
    return ffi::Error::InvalidArgument("tensor_product: more than 8 batch axes");
  PolyShape p;
  if (auto e = decode_poly_shape(out, "tensor_product output", &p); e.failure()) return e;
  s->limbs = p.limbs;
  s->n = p.n;
  s->log_n = p.log_n;
  s->batch = p.polys / (3 * p.limbs);
  s->axes = static_cast<int>(out.size() - 3);
  for (int i = 0; i < s->axes; ++i) s->dims[i] = out[i];
  const int64_t block = 2 * p.limbs * p.n;
  bool xf = true, yf = true;
  if (auto e = check_tensor_operand(x, out, "x", block, &s->x_flat, s->x_stride, &xf); e.failure())
    return e;
  if (auto e = check_tensor_operand(y, out, "y", block, &s->y_flat, s->y_stride, &yf); e.failure())
    return e;
  s->flat = xf && yf;
  if (auto e = expect_count(moduli, 1, s->limbs, "tensor_product moduli"); e.failure()) return e;
  if (auto e = expect_count(neg_qinv, 1, s->limbs, "tensor_product neg_qinv"); e.failure()) return e;
  if (auto e = expect_count(r2, 1, s->limbs, "tensor_product r2"); e.failure()) return e;
  return ffi::Error::Success();
}

// One coefficient of the three outputs (canonical residues; host and device).
FHE_HD void tensor_element(uint32_t x0, uint32_t x1, uint32_t y0, uint32_t y1, uint32_t q,
                           uint32_t neg_qinv, uint32_t r2, uint32_t* d0, uint32_t* d1,
                           uint32_t* d2) {
  // each Montgomery product leaves a factor 2^-32; one more product by r2 = 2^64 mod q removes it
  const uint32_t cross = add_mod(mont_mul(x0, y1, q, neg_qinv), mont_mul(x1, y0, q, neg_qinv), q);
  *d0 = mont_mul(mont_mul(x0, y0, q, neg_qinv), r2, q, neg_qinv);
  *d1 = mont_mul(cross, r2, q, neg_qinv);
  *d2 = mont_mul(mont_mul(x1, y1, q, neg_qinv), r2, q, neg_qinv);
}

}  // namespace jax_fhe
