// Negacyclic NTT on the CPU: the reference semantics the CUDA kernels must match bit for bit.
//
// Forward: natural-order coefficients -> evaluations in bit-reversed order, Cooley-Tukey
// butterflies with tw[m + i] = psi^brev(m + i) (psi a primitive 2N-th root of unity).
// Inverse: Gentleman-Sande butterflies with the inverse twiddles, then a multiply by N^-1.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common.h"
#include "modarith.h"
#include "ntt_args.h"
#include "parallel.h"

namespace jax_fhe {

namespace {

void ntt_forward_one(uint32_t* a, int64_t n, uint32_t q, const uint32_t* w, const uint32_t* ws) {
  for (int64_t m = 1, t = n / 2; m < n; m <<= 1, t >>= 1) {
    for (int64_t i = 0; i < m; ++i) {
      const uint32_t wi = w[m + i], wsi = ws[m + i];
      uint32_t* lo = a + 2 * i * t;
      uint32_t* hi = lo + t;
      for (int64_t j = 0; j < t; ++j) ct_butterfly(lo[j], hi[j], wi, wsi, q);
    }
  }
}

void ntt_inverse_one(uint32_t* a, int64_t n, uint32_t q, const uint32_t* w, const uint32_t* ws,
                     uint32_t n_inv, uint32_t n_inv_shoup) {
  for (int64_t m = n / 2, t = 1; m >= 1; m >>= 1, t <<= 1) {
    for (int64_t i = 0; i < m; ++i) {
      const uint32_t wi = w[m + i], wsi = ws[m + i];
      uint32_t* lo = a + 2 * i * t;
      uint32_t* hi = lo + t;
      for (int64_t j = 0; j < t; ++j) gs_butterfly(lo[j], hi[j], wi, wsi, q);
    }
  }
  for (int64_t j = 0; j < n; ++j) a[j] = mul_shoup(a[j], n_inv, n_inv_shoup, q);
}


}  // namespace

ffi::Error check_rows(const int32_t* rows, int64_t limbs, int64_t table_rows) {
  for (int64_t l = 0; l < limbs; ++l)
    if (rows[l] < 0 || rows[l] >= table_rows)
      return ffi::Error::InvalidArgument("ntt: row index out of range of the tables");
  return ffi::Error::Success();
}

ffi::Error check_row_groups(ffi::Span<const int32_t> groups, int64_t limbs, const int32_t* rows) {
  const int64_t size = static_cast<int64_t>(groups.size());
  if (size == 0) return ffi::Error::Success();
  if (size % kRowGroupSize != 0)
    return ffi::Error::InvalidArgument("ntt: row_groups must hold groups of " +
                                       std::to_string(kRowGroupSize) + " limb indices");
  std::vector<char> seen(static_cast<size_t>(limbs), 0);
  for (int64_t g = 0; g < size; g += kRowGroupSize) {
    for (int p = 0; p < kRowGroupSize; ++p) {
      const int32_t l = groups[g + p];
      if (l < 0) {
        if (p == 0 || l != -1)
          return ffi::Error::InvalidArgument("ntt: a row group must start with a limb and pad with -1");
        continue;
      }
      if (p > 0 && groups[g + p - 1] < 0)
        return ffi::Error::InvalidArgument("ntt: a row group must start with a limb and pad with -1");
      if (l >= limbs || seen[l])
        return ffi::Error::InvalidArgument("ntt: row_groups must list every limb exactly once");
      seen[l] = 1;
      if (rows != nullptr && rows[l] != rows[groups[g]])
        return ffi::Error::InvalidArgument("ntt: the limbs of a row group must use the same row");
    }
  }
  for (int64_t l = 0; l < limbs; ++l)
    if (!seen[l]) return ffi::Error::InvalidArgument("ntt: row_groups must list every limb exactly once");
  return ffi::Error::Success();
}

void ntt_forward_cpu(const PolyShape& s, const uint32_t* src, uint32_t* dst, const int32_t* rows,
                     const uint32_t* moduli, const uint32_t* tw, const uint32_t* tw_shoup) {
  if (dst != src) std::memcpy(dst, src, sizeof(uint32_t) * s.polys * s.n);
  parallel_for(s.polys, s.n * s.log_n, [&](int64_t p) {
    const int64_t row = rows[p % s.limbs];
    ntt_forward_one(dst + p * s.n, s.n, moduli[row], tw + row * s.n, tw_shoup + row * s.n);
  });
}

void ntt_inverse_cpu(const PolyShape& s, const uint32_t* src, uint32_t* dst, const int32_t* rows,
                     const uint32_t* moduli, const uint32_t* itw, const uint32_t* itw_shoup,
                     const uint32_t* n_inv, const uint32_t* n_inv_shoup) {
  if (dst != src) std::memcpy(dst, src, sizeof(uint32_t) * s.polys * s.n);
  parallel_for(s.polys, s.n * s.log_n, [&](int64_t p) {
    const int64_t row = rows[p % s.limbs];
    ntt_inverse_one(dst + p * s.n, s.n, moduli[row], itw + row * s.n, itw_shoup + row * s.n,
                    n_inv[row], n_inv_shoup[row]);
  });
}

namespace {

ffi::Error NttForwardCpuImpl(ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::S32> rows,
                             ffi::Buffer<ffi::U32> moduli, ffi::Buffer<ffi::U32> tw,
                             ffi::Buffer<ffi::U32> tw_shoup, ffi::ResultBuffer<ffi::U32> y,
                             bool /*lazy: a GPU scheduling hint; results are identical*/,
                             ffi::Span<const int32_t> row_groups /*likewise; checked*/) {
  NttCall c;
  if (auto e = decode_ntt_forward_args(x, rows, moduli, tw, tw_shoup, y->dimensions(), row_groups,
                                       rows.typed_data(), &c);
      e.failure())
    return e;
  ntt_forward_cpu(c.s, x.typed_data(), y->typed_data(), rows.typed_data(), moduli.typed_data(),
                  tw.typed_data(), tw_shoup.typed_data());
  return ffi::Error::Success();
}

ffi::Error NttInverseCpuImpl(ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::S32> rows,
                             ffi::Buffer<ffi::U32> moduli, ffi::Buffer<ffi::U32> itw,
                             ffi::Buffer<ffi::U32> itw_shoup, ffi::Buffer<ffi::U32> n_inv,
                             ffi::Buffer<ffi::U32> n_inv_shoup, ffi::ResultBuffer<ffi::U32> y,
                             bool /*lazy*/) {
  NttCall c;
  if (auto e = decode_ntt_inverse_args(x, rows, moduli, itw, itw_shoup, n_inv, n_inv_shoup,
                                       y->dimensions(), rows.typed_data(), &c);
      e.failure())
    return e;
  ntt_inverse_cpu(c.s, x.typed_data(), y->typed_data(), rows.typed_data(), moduli.typed_data(),
                  itw.typed_data(), itw_shoup.typed_data(), n_inv.typed_data(),
                  n_inv_shoup.typed_data());
  return ffi::Error::Success();
}

// The lifted forward NTT (semantics in ntt_args.h). Inputs outside (-q, q) for a used prime are
// rejected here; the CUDA handler takes the range as the caller's contract.
ffi::Error NttForwardLiftCpuImpl(ffi::Buffer<ffi::S32> x, ffi::Buffer<ffi::S32> rows,
                                 ffi::Buffer<ffi::U32> moduli, ffi::Buffer<ffi::U32> tw,
                                 ffi::Buffer<ffi::U32> tw_shoup, ffi::ResultBuffer<ffi::U32> y,
                                 bool /*lazy*/) {
  NttCall c;
  if (auto e = decode_ntt_lift_args(x, rows, moduli, tw, tw_shoup, y->dimensions(), rows.typed_data(), &c);
      e.failure())
    return e;
  const PolyShape& s = c.s;
  const int32_t* r = rows.typed_data();
  const uint32_t* q = moduli.typed_data();
  uint32_t q_min = UINT32_MAX;
  for (int64_t l = 0; l < s.limbs; ++l) q_min = std::min(q_min, q[r[l]]);
  const int32_t* src = x.typed_data();
  const int64_t count = s.polys / s.limbs * s.n;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t v = src[i];
    if ((v < 0 ? -v : v) >= q_min)
      return ffi::Error::InvalidArgument("ntt_lift: an input value is not below every prime in magnitude");
  }
  uint32_t* dst = y->typed_data();
  parallel_for(s.polys, s.n * s.log_n, [&](int64_t p) {
    const int64_t row = r[p % s.limbs];
    const uint32_t qr = q[row];
    const int32_t* in = src + p / s.limbs * s.n;
    uint32_t* out = dst + p * s.n;
    for (int64_t j = 0; j < s.n; ++j)
      out[j] = in[j] < 0 ? static_cast<uint32_t>(in[j] + static_cast<int64_t>(qr)) : static_cast<uint32_t>(in[j]);
    ntt_forward_one(out, s.n, qr, tw.typed_data() + row * s.n, tw_shoup.typed_data() + row * s.n);
  });
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(NttForwardLiftCpu, NttForwardLiftCpuImpl, bind_ntt_lift(ffi::Ffi::Bind()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(NttForwardCpu, NttForwardCpuImpl, bind_ntt_forward(ffi::Ffi::Bind()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(NttInverseCpu, NttInverseCpuImpl, bind_ntt_inverse(ffi::Ffi::Bind()));

}  // namespace jax_fhe
