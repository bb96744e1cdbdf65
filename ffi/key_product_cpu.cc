// Key inner product of hybrid key switching on the CPU (semantics in key_product_args.h); the
// reference for the CUDA kernel. Products are summed in 64 bits and reduced every four terms
// (four products of residues below 2^31 stay below 2^64), so the result is the canonical sum.
#include <vector>

#include "common.h"
#include "key_product_args.h"
#include "ntt_args.h"
#include "modarith.h"
#include "parallel.h"

namespace jax_fhe {

namespace {

// The product of a decoded call; sub (the ModDown variant's, with the shape decoded) or null.
void key_product_cpu(const KeyProductCall& c, const uint32_t* xp, const uint32_t* kp,
                     const uint32_t* subp, uint32_t* yp, ffi::Span<const int32_t> source,
                     ffi::Span<const int32_t> key_poly) {
  const KeyProductShape& s = c.s;
  const int64_t n = s.n, R = s.rows, D = s.digits;
  parallel_for(s.batch * R, n * D * 2, [&](int64_t item) {
    const int64_t b = item / R, j = item % R;
    const KeyProductRow& r = c.rows[j];
    const Reduce64 red{r.p, r.r32, r.r32_shoup, r.one_shoup};
    std::vector<const uint32_t*> src(D), k0(D), k1(D);
    for (int64_t i = 0; i < D; ++i) {
      const int64_t sidx = source[i * R + j];
      src[i] = sidx < s.lx ? xp + ((s.x_batched ? b : 0) * s.lx + sidx) * n
                           : c.conv[i] + ((s.conv_batched[i] ? b : 0) * s.conv_rows[i] + sidx - s.lx) * n;
      k0[i] = kp + ((s.key_batched ? b : 0) * s.key_polys + key_poly[i * R + j]) * n;
      k1[i] = k0[i] + s.key_part * n;
    }
    for (int part = 0; part < 2; ++part) {
      const int64_t o = ((b * 2 + part) * R + j) * n;
      const int64_t so = (((s.sub_batched ? b : 0) * 2 + part) * R + j) * n;
      const std::vector<const uint32_t*>& k = part == 0 ? k0 : k1;
      for (int64_t t = 0; t < n; ++t) {
        uint64_t acc = 0;
        for (int64_t i = 0; i < D; ++i) {
          if (i > 0 && i % 4 == 0) acc = reduce64(acc, red);
          acc += static_cast<uint64_t>(src[i][t]) * k[i][t];
        }
        uint32_t v = reduce64(acc, red);
        if (subp) v = mul_shoup(sub_mod(v, subp[so + t], r.p), r.scale, r.scale_shoup, r.p);
        yp[o + t] = v;
      }
    }
  });
}

ffi::Error KeyProductCpuImpl(ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::U32> key,
                             ffi::RemainingArgs convs, ffi::ResultBuffer<ffi::U32> out,
                             ffi::Span<const int32_t> source, ffi::Span<const int32_t> key_poly,
                             int64_t key_part, ffi::Span<const int64_t> moduli) {
  KeyProductCall c;
  if (auto e = decode_key_product_args(x, key, nullptr, convs, out->dimensions(), source, key_poly,
                                       key_part, moduli, {}, &c);
      e.failure())
    return e;
  key_product_cpu(c, x.typed_data(), key.typed_data(), nullptr, out->typed_data(), source, key_poly);
  return ffi::Error::Success();
}

ffi::Error KeyProductModDownCpuImpl(ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::U32> key,
                                    ffi::Buffer<ffi::U32> sub, ffi::RemainingArgs convs,
                                    ffi::ResultBuffer<ffi::U32> out,
                                    ffi::Span<const int32_t> source,
                                    ffi::Span<const int32_t> key_poly, int64_t key_part,
                                    ffi::Span<const int64_t> moduli, ffi::Span<const int64_t> scale) {
  KeyProductCall c;
  if (auto e = decode_key_product_args(x, key, &sub, convs, out->dimensions(), source, key_poly,
                                       key_part, moduli, scale, &c);
      e.failure())
    return e;
  key_product_cpu(c, x.typed_data(), key.typed_data(), sub.typed_data(), out->typed_data(), source,
                  key_poly);
  return ffi::Error::Success();
}

// The transform's table rows are in range and hold the output rows' primes.
ffi::Error check_table_primes(const ffi::Buffer<ffi::S32>& rows, const ffi::Buffer<ffi::U32>& moduli_tab,
                              int64_t limbs, int64_t table_rows, ffi::Span<const int64_t> moduli) {
  if (auto e = check_rows(rows.typed_data(), limbs, table_rows); e.failure()) return e;
  for (int64_t j = 0; j < limbs; ++j)
    if (moduli_tab.typed_data()[rows.typed_data()[j]] != static_cast<uint32_t>(moduli[j]))
      return key_product_error("the NTT table row of output row " + std::to_string(j) +
                               " is not for its modulus");
  return ffi::Error::Success();
}

// sub is transformed into out, then out is the ModDown variant's sub (read before it is
// overwritten, element by element).
ffi::Error KeyProductModDownNttCpuImpl(ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::U32> key,
                                       ffi::Buffer<ffi::U32> sub, ffi::Buffer<ffi::S32> rows,
                                       ffi::Buffer<ffi::U32> moduli_tab, ffi::Buffer<ffi::U32> tw,
                                       ffi::Buffer<ffi::U32> tw_shoup, ffi::RemainingArgs convs,
                                       ffi::ResultBuffer<ffi::U32> out,
                                       ffi::Span<const int32_t> source,
                                       ffi::Span<const int32_t> key_poly, int64_t key_part,
                                       ffi::Span<const int64_t> moduli, ffi::Span<const int64_t> scale,
                                       bool /*lazy: a GPU scheduling hint*/) {
  KeyProductCall c;
  if (auto e = decode_key_product_ntt_args(x, key, sub, convs, out->dimensions(), source, key_poly,
                                           key_part, moduli, scale, rows, moduli_tab, tw, tw_shoup, &c);
      e.failure())
    return e;
  if (auto e = check_table_primes(rows, moduli_tab, c.ps.limbs, c.table_rows, moduli); e.failure())
    return e;
  uint32_t* o = out->typed_data();
  ntt_forward_cpu(c.ps, sub.typed_data(), o, rows.typed_data(), moduli_tab.typed_data(),
                  tw.typed_data(), tw_shoup.typed_data());
  // sub (every batch entry, as decoded) is now NTT(sub) in o
  key_product_cpu(c, x.typed_data(), key.typed_data(), o, o, source, key_poly);
  return ffi::Error::Success();
}

// The product into out, then the inverse transform in place.
ffi::Error KeyProductInttCpuImpl(ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::U32> key,
                                 ffi::Buffer<ffi::S32> rows, ffi::Buffer<ffi::U32> moduli_tab,
                                 ffi::Buffer<ffi::U32> itw, ffi::Buffer<ffi::U32> itw_shoup,
                                 ffi::Buffer<ffi::U32> n_inv, ffi::Buffer<ffi::U32> n_inv_shoup,
                                 ffi::RemainingArgs convs, ffi::ResultBuffer<ffi::U32> out,
                                 ffi::Span<const int32_t> source, ffi::Span<const int32_t> key_poly,
                                 int64_t key_part, ffi::Span<const int64_t> moduli,
                                 bool /*lazy: a GPU scheduling hint*/) {
  KeyProductCall c;
  if (auto e = decode_key_product_intt_args(x, key, convs, out->dimensions(), source, key_poly,
                                            key_part, moduli, rows, moduli_tab, itw, itw_shoup,
                                            n_inv, n_inv_shoup, &c);
      e.failure())
    return e;
  if (auto e = check_table_primes(rows, moduli_tab, c.ps.limbs, c.table_rows, moduli); e.failure())
    return e;
  uint32_t* o = out->typed_data();
  key_product_cpu(c, x.typed_data(), key.typed_data(), nullptr, o, source, key_poly);
  ntt_inverse_cpu(c.ps, o, o, rows.typed_data(), moduli_tab.typed_data(), itw.typed_data(),
                  itw_shoup.typed_data(), n_inv.typed_data(), n_inv_shoup.typed_data());
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(KeyProductCpu, KeyProductCpuImpl,
                              bind_key_product(ffi::Ffi::Bind()));

XLA_FFI_DEFINE_HANDLER_SYMBOL(KeyProductModDownCpu, KeyProductModDownCpuImpl,
                              bind_key_product_mod_down(ffi::Ffi::Bind()));

XLA_FFI_DEFINE_HANDLER_SYMBOL(KeyProductModDownNttCpu, KeyProductModDownNttCpuImpl,
                              bind_key_product_mod_down_ntt(ffi::Ffi::Bind()));

XLA_FFI_DEFINE_HANDLER_SYMBOL(KeyProductInttCpu, KeyProductInttCpuImpl,
                              bind_key_product_intt(ffi::Ffi::Bind()));

}  // namespace jax_fhe
