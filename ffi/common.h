// Shape checks and argument decoding shared by the CPU and CUDA handlers (host code only).
//
// Conventions (see docs/API.md):
//   * data operands are uint32[..., L, N]; leading axes are batch axes and are flattened into
//     P = prod(leading) * L "polynomial limbs" that a kernel processes in one launch;
//   * tables are indexed by a table row; `rows` (int32[L]) says which table row limb i uses;
//   * tables may carry leading axes of size 1 (jax.vmap with vmap_method="expand_dims" adds
//     them), which are ignored; a table with a real batch axis is rejected.
#pragma once

#include <cstdint>
#include <string>

#include "xla/ffi/api/ffi.h"

namespace jax_fhe {

namespace ffi = xla::ffi;

constexpr int kMinLogN = 10;
constexpr int kMaxLogN = 16;

inline int log2_exact(int64_t n) {
  if (n <= 0 || (n & (n - 1)) != 0) return -1;
  int l = 0;
  while ((int64_t{1} << l) < n) ++l;
  return l;
}

// Shape facts of a [..., L, N] operand.
struct PolyShape {
  int64_t polys = 0;  // prod(leading) * L
  int64_t limbs = 0;  // L
  int64_t n = 0;      // N
  int log_n = 0;
};

inline ffi::Error decode_poly_shape(const ffi::AnyBuffer::Dimensions& dims, const char* what,
                                    PolyShape* out) {
  if (dims.size() < 2) {
    return ffi::Error::InvalidArgument(std::string(what) +
                                       " must have shape [..., L, N] (rank >= 2)");
  }
  out->n = dims[dims.size() - 1];
  out->limbs = dims[dims.size() - 2];
  out->log_n = log2_exact(out->n);
  if (out->log_n < kMinLogN || out->log_n > kMaxLogN) {
    return ffi::Error::InvalidArgument(std::string(what) + ": N = " + std::to_string(out->n) +
                                       " must be a power of two in [2^10, 2^16]");
  }
  int64_t lead = 1;
  for (size_t i = 0; i + 2 < dims.size(); ++i) lead *= dims[i];
  out->polys = lead * out->limbs;
  return ffi::Error::Success();
}

// Element count of a table, requiring that all but its last `keep` axes are 1.
inline ffi::Error table_size(const ffi::AnyBuffer::Dimensions& dims, size_t keep,
                             const char* what, int64_t* count) {
  if (dims.size() < keep) {
    return ffi::Error::InvalidArgument(std::string(what) + " has too few dimensions");
  }
  int64_t c = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i + keep < dims.size()) {
      if (dims[i] != 1) {
        return ffi::Error::InvalidArgument(std::string(what) +
                                           ": tables cannot carry a batch axis (vmap over "
                                           "data, not over contexts)");
      }
    } else {
      c *= dims[i];
    }
  }
  *count = c;
  return ffi::Error::Success();
}

inline ffi::Error expect_count(const ffi::AnyBuffer::Dimensions& dims, size_t keep,
                               int64_t expected, const char* what) {
  int64_t c = 0;
  if (auto e = table_size(dims, keep, what, &c); e.failure()) return e;
  if (c != expected) {
    return ffi::Error::InvalidArgument(std::string(what) + ": expected " +
                                       std::to_string(expected) + " elements, got " +
                                       std::to_string(c));
  }
  return ffi::Error::Success();
}

}  // namespace jax_fhe
