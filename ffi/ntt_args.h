// Argument checks shared by the CPU and CUDA NTT handlers.
#pragma once

#include <utility>

#include "common.h"

namespace jax_fhe {

// x: [..., L, N]; rows: int32[L] (leading axes of size 1 allowed, as for every table: Python
// passes [1, L]); moduli: uint32[T]; tw, tw_shoup: uint32[T, N];
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

// NTT of small signed integers lifted to L primes (jax_fhe_ntt_forward_lift):
//   x: int32[..., N] with |x| < every used prime;  y: uint32[..., L, N],
//   y[..., l, :] = NTT_l(x mod q_rows[l]).
// Decodes the output shape into `s`, checks that x is y without its limb axis and checks the
// tables as check_ntt_args does.
inline ffi::Error check_ntt_lift_args(ffi::AnyBuffer::Dimensions x_dims,
                                      ffi::AnyBuffer::Dimensions y_dims,
                                      ffi::AnyBuffer::Dimensions rows, ffi::AnyBuffer::Dimensions moduli,
                                      ffi::AnyBuffer::Dimensions tw, ffi::AnyBuffer::Dimensions tw_shoup,
                                      PolyShape* s, int64_t* table_rows) {
  if (auto e = decode_poly_shape(y_dims, "ntt_lift output", s); e.failure()) return e;
  if (x_dims.size() + 1 != y_dims.size())
    return ffi::Error::InvalidArgument("ntt_lift: the input must be the output without its limb axis");
  for (size_t i = 0; i + 1 < x_dims.size(); ++i)
    if (x_dims[i] != y_dims[i])
      return ffi::Error::InvalidArgument("ntt_lift: input and output batch shapes differ");
  if (x_dims[x_dims.size() - 1] != s->n)
    return ffi::Error::InvalidArgument("ntt_lift: input and output N differ");
  return check_ntt_args(*s, y_dims, y_dims, rows, moduli, tw, tw_shoup, table_rows);
}

// The forward NTT's row_groups attribute: int32[G * kRowGroupSize], empty, or a partition of the
// limbs [0, L) into groups of up to kRowGroupSize limbs that use the same table row, each group
// listing its limbs first and padded with -1. A schedule, not semantics: the CUDA kernels run a
// group's limbs together so that each twiddle they load serves all of them (where the rows of a
// call repeat, as in ModUp's stacked conversions); the result does not depend on it. With `rows`
// in host memory (the CPU handler) this also checks that a group's limbs share their row; the
// CUDA handler cannot read them, so there a group whose limbs use different rows is the
// caller's error and transforms every member with its first limb's prime.
constexpr int kRowGroupSize = 4;
ffi::Error check_row_groups(ffi::Span<const int32_t> groups, int64_t limbs, const int32_t* rows);

// ntt_cpu.cc: every row index within the tables' `table_rows` rows.
ffi::Error check_rows(const int32_t* rows, int64_t limbs, int64_t table_rows);

// ntt_cpu.cc: the forward NTT on the CPU of the checked operands (src may be dst), limb l of
// every batch entry with the tables' row rows[l].
void ntt_forward_cpu(const PolyShape& s, const uint32_t* src, uint32_t* dst, const int32_t* rows,
                     const uint32_t* moduli, const uint32_t* tw, const uint32_t* tw_shoup);

// ntt_cpu.cc: the inverse NTT on the CPU (with the N^-1 scaling), as ntt_forward_cpu.
void ntt_inverse_cpu(const PolyShape& s, const uint32_t* src, uint32_t* dst, const int32_t* rows,
                     const uint32_t* moduli, const uint32_t* itw, const uint32_t* itw_shoup,
                     const uint32_t* n_inv, const uint32_t* n_inv_shoup);

// A decoded NTT call: the data's shape (the output's for the lifted transform) and the tables'
// row count T.
struct NttCall {
  PolyShape s;
  int64_t table_rows = 0;
};

// The CPU and CUDA handlers decode their operands here. `host_rows`: the rows in host memory (the
// CPU handler), which are then also checked against the tables and the row groups; null where they
// are in device memory (CUDA), where they are the caller's contract (Python checks them).

// jax_fhe_ntt_forward: x [..., L, N], rows, moduli, tw, tw_shoup -> y; attributes lazy, row_groups.
inline ffi::Error decode_ntt_forward_args(const ffi::Buffer<ffi::U32>& x, const ffi::Buffer<ffi::S32>& rows,
                                          const ffi::Buffer<ffi::U32>& moduli, const ffi::Buffer<ffi::U32>& tw,
                                          const ffi::Buffer<ffi::U32>& tw_shoup,
                                          ffi::AnyBuffer::Dimensions y_dims,
                                          ffi::Span<const int32_t> row_groups, const int32_t* host_rows,
                                          NttCall* c) {
  if (auto e = decode_poly_shape(x.dimensions(), "ntt input", &c->s); e.failure()) return e;
  if (auto e = check_ntt_args(c->s, y_dims, x.dimensions(), rows.dimensions(), moduli.dimensions(),
                              tw.dimensions(), tw_shoup.dimensions(), &c->table_rows);
      e.failure())
    return e;
  if (host_rows != nullptr)
    if (auto e = check_rows(host_rows, c->s.limbs, c->table_rows); e.failure()) return e;
  return check_row_groups(row_groups, c->s.limbs, host_rows);
}

// jax_fhe_ntt_inverse: x [..., L, N], rows, moduli, itw, itw_shoup, n_inv, n_inv_shoup -> y;
// attribute lazy.
inline ffi::Error decode_ntt_inverse_args(const ffi::Buffer<ffi::U32>& x, const ffi::Buffer<ffi::S32>& rows,
                                          const ffi::Buffer<ffi::U32>& moduli, const ffi::Buffer<ffi::U32>& itw,
                                          const ffi::Buffer<ffi::U32>& itw_shoup,
                                          const ffi::Buffer<ffi::U32>& n_inv,
                                          const ffi::Buffer<ffi::U32>& n_inv_shoup,
                                          ffi::AnyBuffer::Dimensions y_dims, const int32_t* host_rows,
                                          NttCall* c) {
  if (auto e = decode_poly_shape(x.dimensions(), "intt input", &c->s); e.failure()) return e;
  if (auto e = check_ntt_args(c->s, y_dims, x.dimensions(), rows.dimensions(), moduli.dimensions(),
                              itw.dimensions(), itw_shoup.dimensions(), &c->table_rows);
      e.failure())
    return e;
  if (auto e = expect_count(n_inv.dimensions(), 1, c->table_rows, "intt N^-1"); e.failure()) return e;
  if (auto e = expect_count(n_inv_shoup.dimensions(), 1, c->table_rows, "intt N^-1 (Shoup)"); e.failure())
    return e;
  if (host_rows != nullptr) return check_rows(host_rows, c->s.limbs, c->table_rows);
  return ffi::Error::Success();
}

// jax_fhe_ntt_forward_lift: x int32[..., N], rows, moduli, tw, tw_shoup -> y [..., L, N];
// attribute lazy. (The CPU handler also checks the range of x; on the GPU it is the caller's.)
inline ffi::Error decode_ntt_lift_args(const ffi::Buffer<ffi::S32>& x, const ffi::Buffer<ffi::S32>& rows,
                                       const ffi::Buffer<ffi::U32>& moduli, const ffi::Buffer<ffi::U32>& tw,
                                       const ffi::Buffer<ffi::U32>& tw_shoup, ffi::AnyBuffer::Dimensions y_dims,
                                       const int32_t* host_rows, NttCall* c) {
  if (auto e = check_ntt_lift_args(x.dimensions(), y_dims, rows.dimensions(), moduli.dimensions(),
                                   tw.dimensions(), tw_shoup.dimensions(), &c->s, &c->table_rows);
      e.failure())
    return e;
  if (host_rows != nullptr) return check_rows(host_rows, c->s.limbs, c->table_rows);
  return ffi::Error::Success();
}

// The handlers' bindings, shared by the CPU and CUDA handlers (after the CUDA stream context).
template <typename Binding>
auto bind_ntt_forward(Binding b) {
  return std::move(b)
      .template Arg<ffi::Buffer<ffi::U32>>()  // x [..., L, N]
      .template Arg<ffi::Buffer<ffi::S32>>()  // rows [L]
      .template Arg<ffi::Buffer<ffi::U32>>()  // moduli [T]
      .template Arg<ffi::Buffer<ffi::U32>>()  // twiddles [T, N]
      .template Arg<ffi::Buffer<ffi::U32>>()  // twiddles (Shoup) [T, N]
      .template Ret<ffi::Buffer<ffi::U32>>()  // y [..., L, N]
      .template Attr<bool>("lazy")
      .template Attr<ffi::Span<const int32_t>>("row_groups");
}

template <typename Binding>
auto bind_ntt_inverse(Binding b) {
  return std::move(b)
      .template Arg<ffi::Buffer<ffi::U32>>()  // x [..., L, N]
      .template Arg<ffi::Buffer<ffi::S32>>()  // rows [L]
      .template Arg<ffi::Buffer<ffi::U32>>()  // moduli [T]
      .template Arg<ffi::Buffer<ffi::U32>>()  // inverse twiddles [T, N]
      .template Arg<ffi::Buffer<ffi::U32>>()  // inverse twiddles (Shoup) [T, N]
      .template Arg<ffi::Buffer<ffi::U32>>()  // N^-1 [T]
      .template Arg<ffi::Buffer<ffi::U32>>()  // N^-1 (Shoup) [T]
      .template Ret<ffi::Buffer<ffi::U32>>()  // y [..., L, N]
      .template Attr<bool>("lazy");
}

template <typename Binding>
auto bind_ntt_lift(Binding b) {
  return std::move(b)
      .template Arg<ffi::Buffer<ffi::S32>>()  // x [..., N]
      .template Arg<ffi::Buffer<ffi::S32>>()  // rows [L]
      .template Arg<ffi::Buffer<ffi::U32>>()  // moduli [T]
      .template Arg<ffi::Buffer<ffi::U32>>()  // twiddles [T, N]
      .template Arg<ffi::Buffer<ffi::U32>>()  // twiddles (Shoup) [T, N]
      .template Ret<ffi::Buffer<ffi::U32>>()  // y [..., L, N]
      .template Attr<bool>("lazy");
}

}  // namespace jax_fhe
