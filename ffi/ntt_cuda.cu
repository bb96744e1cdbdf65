// Negacyclic NTT / INTT on CUDA, bit-identical to ntt_cpu.cc.
//
// N = n1 * N2 is viewed as an n1 x N2 row-major matrix (n1 = 2^K1 rows, N2 = 2^K2 columns,
// K1 = floor(log N / 2)). The first K1 Cooley-Tukey stages only pair elements of the same
// column, the last K2 stages only elements of the same row, so the transform is two kernels:
//   phase 1 ("columns"): a block loads kCols columns (n1 x kCols tile), runs stages 0..K1-1;
//   phase 2 ("rows"):    a block loads RPB whole rows, runs stages K1..logN-1.
// The inverse runs the mirror image (rows first, then columns, then the N^-1 scaling).
//
// Inside a phase every thread holds R = 8 elements and performs up to three stages in
// registers (a radix-8 round); rounds exchange data through shared memory.
//
// Twiddles: stage s pairs (j, j + N/2^(s+1)) with tw[2^s + (j >> (logN - s))]. For a
// sub-transform of size 2^K at local stage sigma this is tw[(W << sigma) + (u >> (K - sigma))]
// where u is the local index and W = 1 for a column, W = n1 + row for a row.
//
// Lazy mode (every prime of the call below 2^30): Harvey butterflies keep values in [0, 4q)
// (forward) or [0, 2q) (inverse), which removes most conditional subtractions; outputs are
// reduced to [0, q) on the final store, so both modes give the same bits.
//
// Memory traffic: the two phases would move every byte through HBM twice. The handler
// therefore processes the flattened [P = batch * L] polynomials in chunks small enough that the
// phase-1 output is still in L2 when phase 2 reads it back and overwrites it in place, so HBM
// sees (close to) one read of the input and one write of the output.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

#include "common.h"
#include "modarith.h"
#include "ntt_args.h"

namespace jax_fhe {

namespace {

constexpr int R = 8;        // elements per thread
constexpr int kCols = 16;   // columns per phase-1 block (16 x 4 B = one 64 B segment per row)

struct Tables {
  const int32_t* rows;
  const uint32_t* moduli;
  const uint32_t* tw;
  const uint32_t* tw_shoup;
  const uint32_t* scale;        // N^-1 (inverse only)
  const uint32_t* scale_shoup;
  int limbs;
  int log_n;
  // the launch covers limbs [limb0, limb0 + limb_count) of batch entries [batch0, ...):
  // blockIdx.y = batch_offset * limb_count + limb_offset (limb-major within the batch, so the
  // blocks sharing one limb's twiddle table run close together and reuse it from L2)
  int limb0;
  int limb_count;
  int64_t batch0;
  __device__ __forceinline__ int64_t poly() const {
    const int64_t b = batch0 + blockIdx.y / limb_count;
    return b * limbs + limb0 + blockIdx.y % limb_count;
  }
};

// Geometry of one round: local stages [sig_lo, sig_lo + rho) of a size-2^K sub-transform.
// The thread owns G = R >> rho units of 2^rho elements; unit v's elements sit at
// u = base(v) + e * tau, tau = 2^K >> (sig_lo + rho).
template <int K>
struct Round {
  int sig_lo, rho;
  __device__ __forceinline__ int tau() const { return (1 << K) >> (sig_lo + rho); }
  __device__ __forceinline__ int index(int tt, int gi, int e) const {
    const int units_per_group = (1 << K) / R;  // == threads per sub-transform
    const int v = gi * units_per_group + tt;
    const int t = tau();
    const int low = v & (t - 1);
    const int high = v / t;
    return ((high * t) << rho) + low + e * t;
  }
};

template <int K>
__device__ __forceinline__ Round<K> forward_round(int rd) {
  int lo = 3 * rd;
  return Round<K>{lo, min(3, K - lo)};
}

// Inverse rounds are the forward rounds in reverse order.
template <int K>
__device__ __forceinline__ Round<K> inverse_round(int rd) {
  constexpr int kRounds = (K + 2) / 3;
  return forward_round<K>(kRounds - 1 - rd);
}

// One round of butterflies on the thread's registers. For unit v (high = v / tau) at local
// stage sigma = sig_lo + d, the group index u >> (K - sigma) equals (high << d) + (e >> (rho - d)),
// so each distinct twiddle is loaded once per unit.
template <int K, bool INVERSE, bool LAZY>
__device__ __forceinline__ void compute_round(uint32_t (&x)[R], const Round<K>& rd, int tt,
                                              uint32_t W, const uint32_t* __restrict__ tw,
                                              const uint32_t* __restrict__ tws, uint32_t q) {
  const int span = 1 << rd.rho;
  const int groups = R >> rd.rho;
  const int units_per_group = (1 << K) / R;
#pragma unroll
  for (int qs = 0; qs < 3; ++qs) {
    if (qs >= rd.rho) break;
    const int d = INVERSE ? rd.rho - 1 - qs : qs;  // sigma - sig_lo
    const int sigma = rd.sig_lo + d;
    const int h = 1 << (rd.rho - 1 - d);           // pair distance in e
#pragma unroll
    for (int gi = 0; gi < R; ++gi) {
      if (gi >= groups) break;
      const uint32_t high = static_cast<uint32_t>(gi * units_per_group + tt) / rd.tau();
      const uint32_t tw0 = (W << sigma) + (high << d);
      // fixed trip counts (4 x 8) so the loops unroll completely and x[] stays in registers
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (j >= (1 << d)) break;
        const uint32_t w = __ldg(tw + tw0 + j), ws = __ldg(tws + tw0 + j);
#pragma unroll
        for (int ee = 0; ee < R; ++ee) {
          if (ee >= (1 << (rd.rho - d))) break;
          const int e = (j << (rd.rho - d)) + ee;
          if (e & h) continue;
          uint32_t& a = x[gi * span + e];
          uint32_t& b = x[gi * span + e + h];
          if (INVERSE) {
            if (LAZY) gs_butterfly_lazy(a, b, w, ws, q); else gs_butterfly(a, b, w, ws, q);
          } else {
            if (LAZY) ct_butterfly_lazy(a, b, w, ws, q); else ct_butterfly(a, b, w, ws, q);
          }
        }
      }
    }
  }
}

// Run all rounds of a size-2^K sub-transform. LoadG/StoreG map a local index u to global
// memory; Smem maps it to a shared-memory slot. The first round reads global memory and the
// last writes it; between rounds data goes through shared memory. With CONTIG (rows), a round
// whose units are 4 consecutive elements moves them as one 16-byte vector (LoadG4/StoreG4).
template <int K, bool INVERSE, bool LAZY, bool CONTIG, typename LoadG, typename StoreG,
          typename Smem, typename LoadG4, typename StoreG4>
__device__ __forceinline__ void run_rounds(int tt, uint32_t W, const uint32_t* tw,
                                           const uint32_t* tws, uint32_t q, uint32_t* smem,
                                           LoadG load_g, StoreG store_g, Smem sidx,
                                           LoadG4 load_g4, StoreG4 store_g4) {
  constexpr int kRounds = (K + 2) / 3;
  uint32_t x[R];
  auto round_at = [](int rd) { return INVERSE ? inverse_round<K>(rd) : forward_round<K>(rd); };
  {
    const Round<K> r0 = round_at(0);
    const int span = 1 << r0.rho;
    if (CONTIG && r0.tau() == 1 && span == 4) {
#pragma unroll
      for (int g = 0; g < R / 4; ++g) {
        const uint4 v = load_g4(r0.index(tt, g, 0));
        x[4 * g] = v.x; x[4 * g + 1] = v.y; x[4 * g + 2] = v.z; x[4 * g + 3] = v.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < R; ++i) x[i] = load_g(r0.index(tt, i / span, i % span));
    }
  }
#pragma unroll
  for (int rd = 0; rd < kRounds; ++rd) {
    const Round<K> cur = round_at(rd);
    compute_round<K, INVERSE, LAZY>(x, cur, tt, W, tw, tws, q);
    const int span = 1 << cur.rho;
    if (rd + 1 < kRounds) {
#pragma unroll
      for (int i = 0; i < R; ++i) smem[sidx(cur.index(tt, i / span, i % span))] = x[i];
      __syncthreads();
      const Round<K> nxt = round_at(rd + 1);
      const int nspan = 1 << nxt.rho;
#pragma unroll
      for (int i = 0; i < R; ++i) x[i] = smem[sidx(nxt.index(tt, i / nspan, i % nspan))];
      __syncthreads();
    } else if (CONTIG && cur.tau() == 1 && span == 4) {
#pragma unroll
      for (int g = 0; g < R / 4; ++g)
        store_g4(cur.index(tt, g, 0), make_uint4(x[4 * g], x[4 * g + 1], x[4 * g + 2], x[4 * g + 3]));
    } else {
#pragma unroll
      for (int i = 0; i < R; ++i) store_g(cur.index(tt, i / span, i % span), x[i]);
    }
  }
}

// Phase "columns": stages 0..K1-1 (forward) or their inverse, plus the N^-1 scaling.
template <int K1, bool INVERSE, bool LAZY>
__global__ void __launch_bounds__((1 << K1) / R * kCols)
    ntt_columns_kernel(const uint32_t* src, uint32_t* dst,  // may alias (in place)
                       Tables t) {
  constexpr int n1 = 1 << K1;
  __shared__ uint32_t smem[n1 * kCols];
  const int n2 = (1 << t.log_n) >> K1;
  const int64_t poly = t.poly();
  const int row = t.rows[poly % t.limbs];
  const uint32_t q = t.moduli[row];
  const int64_t N = int64_t{1} << t.log_n;
  const uint32_t* tw = t.tw + row * N;
  const uint32_t* tws = t.tw_shoup + row * N;
  const int c = threadIdx.x % kCols;
  const int tt = threadIdx.x / kCols;
  const int64_t base = poly * N + blockIdx.x * kCols + c;
  const uint32_t* s = src + base;
  uint32_t* d = dst + base;
  uint32_t scale = 0, scale_s = 0;
  if (INVERSE) {
    scale = t.scale[row];
    scale_s = t.scale_shoup[row];
  }
  // forward phase 1 leaves lazy values for phase 2; the inverse ends here: scale by N^-1 and
  // reduce (the Shoup product accepts any 32-bit input)
  run_rounds<K1, INVERSE, LAZY, false>(
      tt, 1u, tw, tws, q, smem, [&](int u) { return s[static_cast<int64_t>(u) * n2]; },
      [&](int u, uint32_t v) {
        if (INVERSE) v = mul_shoup(v, scale, scale_s, q);
        d[static_cast<int64_t>(u) * n2] = v;
      },
      [&](int u) { return u * kCols + c; }, [](int) { return uint4{}; }, [](int, uint4) {});
}

// Phase "rows": stages K1..logN-1 (forward) or their inverse.
template <int K2>
struct RowsGeometry {
  static constexpr int n2 = 1 << K2;
  static constexpr int threads_per_row = n2 / R;
  static constexpr int rows_per_block = (2048 / n2) < 32 ? (2048 / n2) : 32;
  static constexpr int threads = rows_per_block * threads_per_row;
  static constexpr int padded = n2 + n2 / 32;  // one pad word per 32 avoids bank conflicts
};

template <int K2, bool INVERSE, bool LAZY>
__global__ void __launch_bounds__(RowsGeometry<K2>::threads)
    ntt_rows_kernel(const uint32_t* src, uint32_t* dst,  // may alias (in place)
                    Tables t) {
  using G = RowsGeometry<K2>;
  __shared__ uint32_t smem[G::rows_per_block * G::padded];
  const int n1 = (1 << t.log_n) >> K2;
  const int64_t poly = t.poly();
  const int row_tab = t.rows[poly % t.limbs];
  const uint32_t q = t.moduli[row_tab];
  const int64_t N = int64_t{1} << t.log_n;
  const uint32_t* tw = t.tw + row_tab * N;
  const uint32_t* tws = t.tw_shoup + row_tab * N;
  const int r = threadIdx.x / G::threads_per_row;
  const int tt = threadIdx.x % G::threads_per_row;
  const int mrow = blockIdx.x * G::rows_per_block + r;  // matrix row within the polynomial
  const int64_t base = poly * N + static_cast<int64_t>(mrow) * G::n2;
  const uint32_t* s = src + base;
  uint32_t* d = dst + base;
  uint32_t* sm = smem + r * G::padded;
  // the forward transform ends here: reduce lazy values from [0, 4q) to [0, q)
  auto finish = [&](uint32_t v) {
    if (LAZY && !INVERSE) v = csub(csub(v, 2 * q), q);
    return v;
  };
  run_rounds<K2, INVERSE, LAZY, true>(
      tt, static_cast<uint32_t>(n1 + mrow), tw, tws, q, sm, [&](int u) { return s[u]; },
      [&](int u, uint32_t v) { d[u] = finish(v); }, [](int u) { return u + (u >> 5); },
      [&](int u) { return *reinterpret_cast<const uint4*>(s + u); },
      [&](int u, uint4 v) {
        *reinterpret_cast<uint4*>(d + u) = make_uint4(finish(v.x), finish(v.y), finish(v.z), finish(v.w));
      });
}

template <int K1, bool INVERSE, bool LAZY>
void launch_columns(const uint32_t* src, uint32_t* dst, int64_t polys, const Tables& t,
                    cudaStream_t stream) {
  const int n2 = (1 << t.log_n) >> K1;
  dim3 grid(n2 / kCols, static_cast<unsigned>(polys));
  ntt_columns_kernel<K1, INVERSE, LAZY><<<grid, (1 << K1) / R * kCols, 0, stream>>>(src, dst, t);
}

template <int K2, bool INVERSE, bool LAZY>
void launch_rows(const uint32_t* src, uint32_t* dst, int64_t polys, const Tables& t,
                 cudaStream_t stream) {
  using G = RowsGeometry<K2>;
  const int n1 = (1 << t.log_n) >> K2;
  dim3 grid(n1 / G::rows_per_block, static_cast<unsigned>(polys));
  ntt_rows_kernel<K2, INVERSE, LAZY><<<grid, G::threads, 0, stream>>>(src, dst, t);
}

template <bool INVERSE, bool LAZY>
void launch_phase(bool columns, int k, const uint32_t* src, uint32_t* dst, int64_t polys,
                  const Tables& t, cudaStream_t stream) {
  switch (k) {
#define JAX_FHE_NTT_CASE(KK)                                                   \
  case KK:                                                                     \
    if (columns)                                                               \
      launch_columns<KK, INVERSE, LAZY>(src, dst, polys, t, stream);          \
    else                                                                       \
      launch_rows<KK, INVERSE, LAZY>(src, dst, polys, t, stream);             \
    break;
    JAX_FHE_NTT_CASE(5)
    JAX_FHE_NTT_CASE(6)
    JAX_FHE_NTT_CASE(7)
    JAX_FHE_NTT_CASE(8)
#undef JAX_FHE_NTT_CASE
  }
}

// Polynomials per chunk: a quarter of L2 keeps the phase-1 output resident for phase 2.
// JAX_FHE_NTT_CHUNK_BYTES overrides the chunk size (for tuning).
int64_t chunk_polys(int64_t n) {
  static const int64_t chunk_bytes = [] {
    if (const char* env = std::getenv("JAX_FHE_NTT_CHUNK_BYTES")) return std::atoll(env);
    int dev = 0, l2 = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess || l2 <= 0)
      l2 = 40 << 20;
    return static_cast<long long>(l2) / 4;
  }();
  int64_t c = std::max<int64_t>(1, chunk_bytes / (n * 4));
  return std::min<int64_t>(c, 65535);
}

template <bool INVERSE, bool LAZY>
ffi::Error run_ntt(cudaStream_t stream, const PolyShape& s, const uint32_t* src, uint32_t* dst,
                   Tables t) {
  const int k1 = s.log_n / 2, k2 = s.log_n - k1;
  const int64_t batch = s.polys / s.limbs;
  // chunks of (limb window x batch window), limb-major, each about chunk_polys() polynomials
  const int64_t budget = chunk_polys(s.n);
  const int64_t limb_step = std::max<int64_t>(1, std::min<int64_t>(s.limbs, budget / batch));
  const int64_t batch_step = std::max<int64_t>(1, std::min<int64_t>(batch, budget / limb_step));
  for (int64_t l0 = 0; l0 < s.limbs; l0 += limb_step) {
    for (int64_t b0 = 0; b0 < batch; b0 += batch_step) {
      t.limb0 = static_cast<int>(l0);
      t.limb_count = static_cast<int>(std::min(limb_step, s.limbs - l0));
      t.batch0 = b0;
      const int64_t np = std::min(batch_step, batch - b0) * t.limb_count;
      if (!INVERSE) {
        launch_phase<false, LAZY>(true, k1, src, dst, np, t, stream);
        launch_phase<false, LAZY>(false, k2, dst, dst, np, t, stream);
      } else {
        launch_phase<true, LAZY>(false, k2, src, dst, np, t, stream);
        launch_phase<true, LAZY>(true, k1, dst, dst, np, t, stream);
      }
    }
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return ffi::Error::Internal(std::string("ntt kernel launch failed: ") + cudaGetErrorString(err));
  return ffi::Error::Success();
}

ffi::Error NttForwardCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                              ffi::Buffer<ffi::S32> rows, ffi::Buffer<ffi::U32> moduli,
                              ffi::Buffer<ffi::U32> tw, ffi::Buffer<ffi::U32> tw_shoup,
                              ffi::ResultBuffer<ffi::U32> y, bool lazy) {
  PolyShape s;
  if (auto e = decode_poly_shape(x.dimensions(), "ntt input", &s); e.failure()) return e;
  int64_t table_rows = 0;
  if (auto e = check_ntt_args(s, y->dimensions(), x.dimensions(), rows.dimensions(),
                              moduli.dimensions(), tw.dimensions(), tw_shoup.dimensions(),
                              &table_rows);
      e.failure())
    return e;
  if (s.polys == 0) return ffi::Error::Success();
  Tables t{rows.typed_data(), moduli.typed_data(), tw.typed_data(), tw_shoup.typed_data(),
           nullptr, nullptr, static_cast<int>(s.limbs), s.log_n, 0, 1, 0};
  return lazy ? run_ntt<false, true>(stream, s, x.typed_data(), y->typed_data(), t)
              : run_ntt<false, false>(stream, s, x.typed_data(), y->typed_data(), t);
}

ffi::Error NttInverseCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                              ffi::Buffer<ffi::S32> rows, ffi::Buffer<ffi::U32> moduli,
                              ffi::Buffer<ffi::U32> itw, ffi::Buffer<ffi::U32> itw_shoup,
                              ffi::Buffer<ffi::U32> n_inv, ffi::Buffer<ffi::U32> n_inv_shoup,
                              ffi::ResultBuffer<ffi::U32> y, bool lazy) {
  PolyShape s;
  if (auto e = decode_poly_shape(x.dimensions(), "intt input", &s); e.failure()) return e;
  int64_t table_rows = 0;
  if (auto e = check_ntt_args(s, y->dimensions(), x.dimensions(), rows.dimensions(),
                              moduli.dimensions(), itw.dimensions(), itw_shoup.dimensions(),
                              &table_rows);
      e.failure())
    return e;
  if (auto e = expect_count(n_inv.dimensions(), 1, table_rows, "intt N^-1"); e.failure()) return e;
  if (auto e = expect_count(n_inv_shoup.dimensions(), 1, table_rows, "intt N^-1 (Shoup)");
      e.failure())
    return e;
  if (s.polys == 0) return ffi::Error::Success();
  Tables t{rows.typed_data(),  moduli.typed_data(),      itw.typed_data(),
           itw_shoup.typed_data(), n_inv.typed_data(), n_inv_shoup.typed_data(),
           static_cast<int>(s.limbs), s.log_n, 0, 1, 0};
  return lazy ? run_ntt<true, true>(stream, s, x.typed_data(), y->typed_data(), t)
              : run_ntt<true, false>(stream, s, x.typed_data(), y->typed_data(), t);
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(NttForwardCuda, NttForwardCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<bool>("lazy"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(NttInverseCuda, NttInverseCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<bool>("lazy"),
                              {ffi::Traits::kCmdBufferCompatible});

}  // namespace jax_fhe
