// Argument checks and the launch plan shared by the CPU and CUDA key inner-product handlers.
//
// The key inner product of hybrid key switching (jax_fhe.rlwe.hybrid.key_switch), for output
// rows j = 0..R-1, both key parts c = 0, 1 and every batch entry b:
//
//   y[b, c, j] = sum_i src_i(b, j) * key[key_poly[i, j] + c * key_part]  mod p_j
//
// where digit slot i = 0..D-1 reads its extended limb for row j either from the ciphertext
// component x (the digit's own limbs) or from its ModUp conversion conv_i:
//
//   src_i(b, j) = x[b, source[i, j]]               if source[i, j] < Lx
//               = conv_i[b, source[i, j] - Lx]      otherwise.
//
// D = len(source) / R. There is one conversion operand per digit, or a single one that every
// digit reads (ModUp's stacked conversions, [B..., D * Lc, N]; the sources then index its limbs).
//
// So no extended digit is ever assembled, and every key polynomial is read once per launch,
// for all batch entries. The ModDown variant (jax_fhe_key_inner_product_mod_down) fuses the
// last step of ModDown into the store:
//
//   out[b, c, j] = (y[b, c, j] - sub[b, c, j]) * scale_j  mod p_j
//
// Operands (uint32, NTT domain, canonical residues):
//   x      [B..., Lx, N]            conv_i  [B..., Lc_i, N]
//          (each data operand has the output's batch entries, or a single one that serves all:
//          jax.vmap with vmap_method="expand_dims" gives unbatched operands size-1 axes)
//   key    [Bk..., K, N]            the key's K polynomials (flattened [dnum, 2, T] for a
//                                   KeySwitchKey), with batch axes Bk (one entry or the output's)
//   sub    [B..., 2, R, N]          (ModDown variant)         out [B..., 2, R, N]
// Attributes: source int32[D * R], key_poly int32[D * R], key_part (int64), moduli int64[R]
// (p_j < 2^31), and for the ModDown variant scale int64[R] (scale_j < p_j).
//
// The ModDown-NTT variant (jax_fhe_key_inner_product_mod_down_ntt) takes sub in the
// coefficient domain and transforms it on the way, fused with the store on the GPU:
//
//   out[b, c, j] = (y[b, c, j] - NTT_j(sub[b, c, j])) * scale_j  mod p_j
//
// with the forward NTT operands of jax_fhe_ntt_forward after sub: rows int32[R] (the table row
// of output row j, whose prime must be moduli[j]), the table moduli, tw, tw_shoup, and the
// attribute lazy. Here sub must have every batch entry of the output (same shape).
//
// The INTT variant (jax_fhe_key_inner_product_intt) returns the product in the coefficient
// domain, the first step of ModDown for the special rows:
//
//   out[b, c, j] = INTT_j(y[b, c, j])
//
// with the inverse NTT operands of jax_fhe_ntt_inverse after key: rows int32[R] (the table row
// of output row j, whose prime must be moduli[j]), the table moduli, itw, itw_shoup, n_inv,
// n_inv_shoup, and the attribute lazy. On the GPU, for one ciphertext, the INTT's first phase
// computes the product where it would load it, so y is never written.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common.h"
#include "modarith.h"
#include "ntt_args.h"

namespace jax_fhe {

constexpr int kKeyProductMaxDigits = 8;
// Rows per launch: the plan below travels as a kernel parameter (by value, under 4 KB).
constexpr int kKeyProductRowsPerLaunch = 64;

// Per-row constants: modulus, 2^32 mod p (and its Shoup companion), the Shoup companion of 1
// (reduce64 in modarith.h), and the ModDown scale with its Shoup companion.
struct KeyProductRow {
  uint32_t p, r32, r32_shoup, one_shoup;
  uint32_t scale, scale_shoup;
};

// One launch's worth of rows: everything the kernel needs besides the data pointers.
struct KeyProductPlan {
  const uint32_t* conv[kKeyProductMaxDigits];
  int32_t conv_rows[kKeyProductMaxDigits];
  uint8_t source[kKeyProductMaxDigits][kKeyProductRowsPerLaunch];
  uint16_t key_poly[kKeyProductMaxDigits][kKeyProductRowsPerLaunch];
  KeyProductRow row[kKeyProductRowsPerLaunch];
  int32_t conv_batched[kKeyProductMaxDigits];  // 0: one entry serves every batch entry
  int32_t rows;     // rows in this launch
  int32_t row0;     // first output row of this launch
};

// Shapes of one call, checked against each other and the attributes.
struct KeyProductShape {
  int64_t batch = 0, n = 0, lx = 0, rows = 0, digits = 0;  // batch: the output's
  int64_t key_polys = 0, key_part = 0;  // key_polys: K, per batch entry of the key
  bool x_batched = true, sub_batched = true, key_batched = false;
  std::vector<int64_t> conv_rows;
  std::vector<bool> conv_batched;
};

// One decoded call, what the handlers work from: its shapes, per-row constants and conversion
// pointers (one per digit), and for the transform variants the transform's view of the output
// (2B entries of R limbs) and its tables' row count.
struct KeyProductCall {
  KeyProductShape s;
  std::vector<KeyProductRow> rows;
  std::vector<const uint32_t*> conv;
  PolyShape ps;
  int64_t table_rows = 0;
};

inline ffi::Error key_product_error(const std::string& msg) {
  return ffi::Error::InvalidArgument("key_inner_product: " + msg);
}

// Leading (batch) element count of a [B..., K, N] operand, with K and N checked.
inline ffi::Error key_product_batch(const ffi::AnyBuffer::Dimensions& d, size_t inner,
                                    const char* what, int64_t* batch) {
  if (d.size() < inner) return key_product_error(std::string(what) + " has too few dimensions");
  int64_t b = 1;
  for (size_t i = 0; i + inner < d.size(); ++i) b *= d[i];
  *batch = b;
  return ffi::Error::Success();
}

// Validates every shape and attribute; fills `s` and `rows` (one entry per output row).
inline ffi::Error check_key_product_args(
    const ffi::AnyBuffer::Dimensions& x, const ffi::AnyBuffer::Dimensions& key,
    const std::vector<ffi::AnyBuffer::Dimensions>& convs, const ffi::AnyBuffer::Dimensions* sub,
    const ffi::AnyBuffer::Dimensions& out, ffi::Span<const int32_t> source,
    ffi::Span<const int32_t> key_poly, int64_t key_part, ffi::Span<const int64_t> moduli,
    ffi::Span<const int64_t> scale, KeyProductShape* s, std::vector<KeyProductRow>* rows) {
  PolyShape xs;
  if (auto e = decode_poly_shape(x, "key_inner_product x", &xs); e.failure()) return e;
  s->n = xs.n;
  s->lx = xs.limbs;
  if (out.size() < 3 || out[out.size() - 1] != s->n || out[out.size() - 3] != 2)
    return key_product_error("the output must be [B..., 2, R, N]");
  s->rows = out[out.size() - 2];
  if (auto e = key_product_batch(out, 3, "out", &s->batch); e.failure()) return e;
  // a data operand's batch entries: the output's, or one shared by all
  auto batched = [&](int64_t b, const std::string& what, bool* flag) {
    *flag = b == s->batch;
    if (b == s->batch || b == 1) return ffi::Error::Success();
    return key_product_error(what + " has " + std::to_string(b) + " batch entries, the output " +
                             std::to_string(s->batch));
  };
  int64_t xb = 0;
  if (auto e = key_product_batch(x, 2, "x", &xb); e.failure()) return e;
  if (auto e = batched(xb, "x", &s->x_batched); e.failure()) return e;
  s->digits = s->rows > 0 ? static_cast<int64_t>(source.size()) / s->rows
                          : static_cast<int64_t>(convs.size());
  if (s->digits < 1 || s->digits > kKeyProductMaxDigits)
    return key_product_error("the number of digits must be in [1, " +
                             std::to_string(kKeyProductMaxDigits) + "], got " +
                             std::to_string(s->digits));
  if (static_cast<int64_t>(convs.size()) != s->digits && convs.size() != 1)
    return key_product_error("give one conversion per digit (" + std::to_string(s->digits) +
                             ") or one shared by all, got " + std::to_string(convs.size()));
  s->conv_rows.clear();
  s->conv_batched.clear();
  for (int64_t i = 0; i < s->digits; ++i) {
    const auto& c = convs[convs.size() == 1 ? 0 : i];
    const std::string what = "conv " + std::to_string(i);
    int64_t b = 0;
    bool flag = true;
    if (c.size() < 2 || c[c.size() - 1] != s->n)
      return key_product_error(what + " must be [B..., Lc, N] with N = " + std::to_string(s->n));
    if (auto e = key_product_batch(c, 2, "conv", &b); e.failure()) return e;
    if (auto e = batched(b, what, &flag); e.failure()) return e;
    s->conv_rows.push_back(c[c.size() - 2]);
    s->conv_batched.push_back(flag);
    if (s->lx + c[c.size() - 2] > 255)
      return key_product_error("x rows + conv rows must stay below 256");
  }
  if (sub) {
    int64_t b = 0;
    if (sub->size() < 3 || (*sub)[sub->size() - 1] != s->n || (*sub)[sub->size() - 2] != s->rows ||
        (*sub)[sub->size() - 3] != 2)
      return key_product_error("sub must be [B..., 2, R, N] like the output");
    if (auto e = key_product_batch(*sub, 3, "sub", &b); e.failure()) return e;
    if (auto e = batched(b, "sub", &s->sub_batched); e.failure()) return e;
  }
  if (key.size() < 2 || key[key.size() - 1] != s->n)
    return key_product_error("the key must be [Bk..., K, N] with N = " + std::to_string(s->n));
  s->key_polys = key[key.size() - 2];
  int64_t kb = 0;
  if (auto e = key_product_batch(key, 2, "key", &kb); e.failure()) return e;
  if (auto e = batched(kb, "the key", &s->key_batched); e.failure()) return e;
  if (s->batch == 1) s->key_batched = false;
  s->key_part = key_part;
  const int64_t R = s->rows, D = s->digits;
  if (static_cast<int64_t>(source.size()) != D * R || static_cast<int64_t>(key_poly.size()) != D * R)
    return key_product_error("source and key_poly must hold digits * rows = " +
                             std::to_string(D * R) + " entries");
  if (static_cast<int64_t>(moduli.size()) != R)
    return key_product_error("moduli must hold one prime per output row");
  if (sub && static_cast<int64_t>(scale.size()) != R)
    return key_product_error("scale must hold one constant per output row");
  if (key_part < 0 || key_part > 65535) return key_product_error("key_part out of range");
  for (int64_t i = 0; i < D; ++i)
    for (int64_t j = 0; j < R; ++j) {
      const int64_t src = source[i * R + j];
      if (src < 0 || src >= s->lx + s->conv_rows[i])
        return key_product_error("source[" + std::to_string(i) + ", " + std::to_string(j) +
                                 "] = " + std::to_string(src) + " is out of range");
      const int64_t kp = key_poly[i * R + j];
      if (kp < 0 || kp + key_part >= s->key_polys || kp > 65535)
        return key_product_error("key_poly[" + std::to_string(i) + ", " + std::to_string(j) +
                                 "] = " + std::to_string(kp) + " is outside the key");
    }
  rows->clear();
  for (int64_t j = 0; j < R; ++j) {
    const int64_t p = moduli[j];
    if (p < 3 || p >= (int64_t{1} << 31) || p % 2 == 0)
      return key_product_error("moduli must be odd and below 2^31");
    KeyProductRow r{};
    r.p = static_cast<uint32_t>(p);
    r.r32 = static_cast<uint32_t>((uint64_t{1} << 32) % static_cast<uint64_t>(p));
    r.r32_shoup = shoup_companion(r.r32, p);
    r.one_shoup = shoup_companion(1, p);
    if (sub) {
      if (scale[j] < 0 || scale[j] >= p) return key_product_error("scale must be below its prime");
      r.scale = static_cast<uint32_t>(scale[j]);
      r.scale_shoup = shoup_companion(r.scale, p);
    }
    rows->push_back(r);
  }
  return ffi::Error::Success();
}

// Decodes the conversions (the handlers' remaining arguments) and checks every argument:
// the part of the CPU and CUDA handlers that is the same.
inline ffi::Error decode_key_product_args(
    const ffi::Buffer<ffi::U32>& x, const ffi::Buffer<ffi::U32>& key,
    const ffi::Buffer<ffi::U32>* sub, const ffi::RemainingArgs& convs,
    const ffi::AnyBuffer::Dimensions& out, ffi::Span<const int32_t> source,
    ffi::Span<const int32_t> key_poly, int64_t key_part, ffi::Span<const int64_t> moduli,
    ffi::Span<const int64_t> scale, KeyProductCall* c) {
  std::vector<ffi::AnyBuffer::Dimensions> conv_dims;
  std::vector<const uint32_t*>* conv_ptr = &c->conv;
  conv_ptr->clear();
  for (size_t i = 0; i < convs.size(); ++i) {
    auto c = convs.get<ffi::Buffer<ffi::U32>>(i);
    if (c.has_error()) return key_product_error("conv operands must be uint32 arrays");
    conv_dims.push_back(c->dimensions());
    conv_ptr->push_back(c->typed_data());
  }
  const ffi::AnyBuffer::Dimensions sub_dims = sub ? sub->dimensions() : ffi::AnyBuffer::Dimensions();
  if (auto e = check_key_product_args(x.dimensions(), key.dimensions(), conv_dims,
                                      sub ? &sub_dims : nullptr, out, source, key_poly,
                                      key_part, moduli, scale, &c->s, &c->rows);
      e.failure())
    return e;
  // one stacked conversion: every digit reads it (the kernels then index conv[i] per digit)
  conv_ptr->resize(static_cast<size_t>(c->s.digits), conv_ptr->front());
  return ffi::Error::Success();
}

// The ModDown-NTT variant's decoding: decode_key_product_args, then sub has the output's
// shape and the NTT tables fit it.
inline ffi::Error decode_key_product_ntt_args(
    const ffi::Buffer<ffi::U32>& x, const ffi::Buffer<ffi::U32>& key,
    const ffi::Buffer<ffi::U32>& sub, const ffi::RemainingArgs& convs,
    const ffi::AnyBuffer::Dimensions& out, ffi::Span<const int32_t> source,
    ffi::Span<const int32_t> key_poly, int64_t key_part, ffi::Span<const int64_t> moduli,
    ffi::Span<const int64_t> scale, const ffi::Buffer<ffi::S32>& rows,
    const ffi::Buffer<ffi::U32>& moduli_tab, const ffi::Buffer<ffi::U32>& tw,
    const ffi::Buffer<ffi::U32>& tw_shoup, KeyProductCall* c) {
  if (auto e = decode_key_product_args(x, key, &sub, convs, out, source, key_poly, key_part,
                                       moduli, scale, c);
      e.failure())
    return e;
  const auto& sd = sub.dimensions();
  bool same = sd.size() == out.size();
  for (size_t i = 0; same && i < sd.size(); ++i) same = sd[i] == out[i];
  if (!same) return key_product_error("sub must have the output's shape (every batch entry)");
  if (auto e = decode_poly_shape(sd, "key_inner_product sub", &c->ps); e.failure()) return e;
  return check_ntt_args(c->ps, out, sd, rows.dimensions(), moduli_tab.dimensions(), tw.dimensions(),
                        tw_shoup.dimensions(), &c->table_rows);
}

// The INTT variant's decoding: decode_key_product_args (no sub), then the inverse NTT's tables
// fit the output.
inline ffi::Error decode_key_product_intt_args(
    const ffi::Buffer<ffi::U32>& x, const ffi::Buffer<ffi::U32>& key, const ffi::RemainingArgs& convs,
    const ffi::AnyBuffer::Dimensions& out, ffi::Span<const int32_t> source,
    ffi::Span<const int32_t> key_poly, int64_t key_part, ffi::Span<const int64_t> moduli,
    const ffi::Buffer<ffi::S32>& rows, const ffi::Buffer<ffi::U32>& moduli_tab,
    const ffi::Buffer<ffi::U32>& itw, const ffi::Buffer<ffi::U32>& itw_shoup,
    const ffi::Buffer<ffi::U32>& n_inv, const ffi::Buffer<ffi::U32>& n_inv_shoup, KeyProductCall* c) {
  if (auto e = decode_key_product_args(x, key, nullptr, convs, out, source, key_poly, key_part,
                                       moduli, {}, c);
      e.failure())
    return e;
  if (auto e = decode_poly_shape(out, "key_inner_product output", &c->ps); e.failure()) return e;
  if (auto e = check_ntt_args(c->ps, out, out, rows.dimensions(), moduli_tab.dimensions(),
                              itw.dimensions(), itw_shoup.dimensions(), &c->table_rows);
      e.failure())
    return e;
  if (auto e = expect_count(n_inv.dimensions(), 1, c->table_rows, "intt N^-1"); e.failure()) return e;
  return expect_count(n_inv_shoup.dimensions(), 1, c->table_rows, "intt N^-1 (Shoup)");
}

// The plan of the launch covering rows [row0, row0 + kKeyProductRowsPerLaunch).
inline KeyProductPlan key_product_plan(const KeyProductCall& c, ffi::Span<const int32_t> source,
                                       ffi::Span<const int32_t> key_poly, int64_t row0) {
  const KeyProductShape& s = c.s;
  KeyProductPlan plan{};
  plan.row0 = static_cast<int32_t>(row0);
  plan.rows = static_cast<int32_t>(std::min<int64_t>(kKeyProductRowsPerLaunch, s.rows - row0));
  for (int64_t i = 0; i < s.digits; ++i) {
    plan.conv[i] = c.conv[i];
    plan.conv_rows[i] = static_cast<int32_t>(s.conv_rows[i]);
    plan.conv_batched[i] = s.conv_batched[i] ? 1 : 0;
    for (int j = 0; j < plan.rows; ++j) {
      plan.source[i][j] = static_cast<uint8_t>(source[i * s.rows + row0 + j]);
      plan.key_poly[i][j] = static_cast<uint16_t>(key_poly[i * s.rows + row0 + j]);
    }
  }
  for (int j = 0; j < plan.rows; ++j) plan.row[j] = c.rows[row0 + j];
  return plan;
}

// The four key-product targets' signatures, written once for the CPU and CUDA handlers (the
// CUDA ones pass a binding that starts with the stream context). Arguments: x [B..., Lx, N],
// key [..., N], then the target's own buffers, then conv_i [B..., Lc_i, N] (remaining
// arguments); result out [B..., 2, R, N]; attributes source, key_poly, key_part, moduli, then
// the target's own.
template <typename Binding>
auto bind_key_product_tail(Binding b) {
  return std::move(b).RemainingArgs()
      .template Ret<ffi::Buffer<ffi::U32>>()
      .template Attr<ffi::Span<const int32_t>>("source")
      .template Attr<ffi::Span<const int32_t>>("key_poly")
      .template Attr<int64_t>("key_part")
      .template Attr<ffi::Span<const int64_t>>("moduli");
}

// jax_fhe_key_inner_product
template <typename Binding>
auto bind_key_product(Binding b) {
  return bind_key_product_tail(std::move(b).template Arg<ffi::Buffer<ffi::U32>>().template Arg<ffi::Buffer<ffi::U32>>());
}

// jax_fhe_key_inner_product_mod_down: sub [B..., 2, R, N]; attribute scale
template <typename Binding>
auto bind_key_product_mod_down(Binding b) {
  return bind_key_product_tail(std::move(b).template Arg<ffi::Buffer<ffi::U32>>()
                                   .template Arg<ffi::Buffer<ffi::U32>>()
                                   .template Arg<ffi::Buffer<ffi::U32>>())
      .template Attr<ffi::Span<const int64_t>>("scale");
}

// jax_fhe_key_inner_product_mod_down_ntt: sub [B..., 2, R, N] (coefficients), rows [R] (NTT
// table rows), NTT moduli [T], tw [T, N], tw_shoup [T, N]; attributes scale, lazy
template <typename Binding>
auto bind_key_product_mod_down_ntt(Binding b) {
  return bind_key_product_tail(std::move(b).template Arg<ffi::Buffer<ffi::U32>>()
                                   .template Arg<ffi::Buffer<ffi::U32>>()
                                   .template Arg<ffi::Buffer<ffi::U32>>()
                                   .template Arg<ffi::Buffer<ffi::S32>>()
                                   .template Arg<ffi::Buffer<ffi::U32>>()
                                   .template Arg<ffi::Buffer<ffi::U32>>()
                                   .template Arg<ffi::Buffer<ffi::U32>>())
      .template Attr<ffi::Span<const int64_t>>("scale")
      .template Attr<bool>("lazy");
}

// jax_fhe_key_inner_product_intt: rows [R] (INTT table rows), INTT moduli [T], itw [T, N],
// itw_shoup [T, N], n_inv [T], n_inv_shoup [T]; attribute lazy
template <typename Binding>
auto bind_key_product_intt(Binding b) {
  return bind_key_product_tail(std::move(b).template Arg<ffi::Buffer<ffi::U32>>()
                                   .template Arg<ffi::Buffer<ffi::U32>>()
                                   .template Arg<ffi::Buffer<ffi::S32>>()
                                   .template Arg<ffi::Buffer<ffi::U32>>()
                                   .template Arg<ffi::Buffer<ffi::U32>>()
                                   .template Arg<ffi::Buffer<ffi::U32>>()
                                   .template Arg<ffi::Buffer<ffi::U32>>()
                                   .template Arg<ffi::Buffer<ffi::U32>>())
      .template Attr<bool>("lazy");
}

}  // namespace jax_fhe
