// Argument checks shared by the CPU and CUDA NTT handlers.
#pragma once

#include "common.h"

namespace jax_fhe {

// x: [..., L, N]; rows: int32[L]; moduli: uint32[T]; tw, tw_shoup: uint32[T, N];
// scale, scale_shoup (inverse only): uint32[T].
inline ffi::Error check_ntt_args(const PolyShape& s, ffi::AnyBuffer::Dimensions out_dims,
                                 ffi::AnyBuffer::Dimensions x_dims,
                                 ffi::AnyBuffer::Dimensions rows, ffi::AnyBuffer::Dimensions moduli,
                                 ffi::AnyBuffer::Dimensions tw, ffi::AnyBuffer::Dimensions tw_shoup,
                                 int64_t* table_rows) {
  if (out_dims.size() != x_dims.size()) return ffi::Error::InvalidArgument("ntt: output rank mismatch");
  for (size_t i = 0; i < x_dims.size(); ++i)
    if (out_dims[i] != x_dims[i]) return ffi::Error::InvalidArgument("ntt: output shape mismatch");
  if (auto e = expect_count(rows, 1, s.limbs, "ntt rows"); e.failure()) return e;
  if (auto e = table_size(moduli, 1, "ntt moduli", table_rows); e.failure()) return e;
  if (auto e = expect_count(tw, 2, *table_rows * s.n, "ntt twiddles"); e.failure()) return e;
  if (auto e = expect_count(tw_shoup, 2, *table_rows * s.n, "ntt twiddles (Shoup)"); e.failure()) return e;
  return ffi::Error::Success();
}

}  // namespace jax_fhe
