// Key inner product of hybrid key switching on CUDA (semantics in key_product_args.h),
// bit-identical to key_product_cpu.cc.
//
// A thread owns 4 consecutive coefficients of one output row (blockIdx.y): it loads the
// row's D key words of both key parts once (2 D x 16-byte loads) and then loops over every
// batch entry, reading each digit's extended limb where ModUp left it (x for the digit's own
// rows, conv_i for the others) and writing both parts of the output. Each key polynomial is
// thus read once per launch whatever the batch (unless the key itself is batched: jax.vmap over
// keys; then each entry's key is loaded in the loop), and no extended digit is assembled. The 64-bit
// sums take one IMAD.WIDE per term; four terms of residues below 2^31 stay below 2^64, so
// digits beyond four fold the accumulator first (as on the CPU).
//
// For one ciphertext at N = 2^15/2^16 the product is also fused into ModDown's transforms
// (key_product_rows_kernel): into the last NTT's rows phase, whose store subtracts and scales
// (jax_fhe_key_inner_product_mod_down_ntt), and into the first INTT's rows phase, whose input
// it is (jax_fhe_key_inner_product_intt).
#include <cuda_runtime.h>

#include <vector>

#include "common.h"
#include "cuda_device.cuh"
#include "key_product_args.h"
#include "modarith.h"
#include "ntt_device.cuh"

namespace jax_fhe {

namespace {

constexpr int kVec = 4;

__device__ __forceinline__ uint64_t mad_wide_u32(uint32_t a, uint32_t b, uint64_t acc) {
  uint64_t d;
  asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(d) : "r"(a), "r"(b), "l"(acc));
  return d;
}

__device__ __forceinline__ void load4(const uint32_t* p, uint32_t (&v)[kVec]) {
  const uint4 t = *reinterpret_cast<const uint4*>(p);
  v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}

// Data pointers and strides of one call, besides the plan.
struct KeyProductData {
  const uint32_t* x;
  const uint32_t* key;
  int64_t key_stride;  // words between the key's batch entries (0: one key for all)
  int64_t key_part;    // polynomials between key parts 0 and 1
  int lx;
  bool x_batched;
  int digits;
  int log_n;
};

// x: [batch, lx, n]; sub, out: [batch, 2, rows_total, n]; key: flat polynomials.
template <int D, bool MODDOWN>
__global__ void __launch_bounds__(256)
    key_product_kernel(const uint32_t* __restrict__ x, const uint32_t* __restrict__ key,
                       const uint32_t* __restrict__ sub, uint32_t* __restrict__ out,
                       int64_t batch, bool x_batched, bool sub_batched, int lx, int log_n,
                       int rows_total, int64_t key_part, int64_t key_stride,
                       const __grid_constant__ KeyProductPlan plan) {
  const int j = blockIdx.y;
  const int64_t n = int64_t{1} << log_n;
  const int64_t t0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  if (t0 >= n) return;
  const KeyProductRow r = plan.row[j];
  const Reduce64 red{r.p, r.r32, r.r32_shoup, r.one_shoup};
  uint32_t k[D][2][kVec];
  const uint32_t* src[D];
  int64_t src_stride[D];  // words between batch entries
  auto load_key = [&](int64_t b) {
#pragma unroll
    for (int i = 0; i < D; ++i) {
      const uint32_t* kp = key + b * key_stride + static_cast<int64_t>(plan.key_poly[i][j]) * n + t0;
      load4(kp, k[i][0]);
      load4(kp + key_part * n, k[i][1]);
    }
  };
  load_key(0);
#pragma unroll
  for (int i = 0; i < D; ++i) {
    const int s = plan.source[i][j];
    if (s < lx) {
      src[i] = x + static_cast<int64_t>(s) * n + t0;
      src_stride[i] = x_batched ? static_cast<int64_t>(lx) * n : 0;
    } else {
      src[i] = plan.conv[i] + static_cast<int64_t>(s - lx) * n + t0;
      src_stride[i] = plan.conv_batched[i] ? static_cast<int64_t>(plan.conv_rows[i]) * n : 0;
    }
  }
  const int64_t row = plan.row0 + j;
  for (int64_t b = 0; b < batch; ++b) {
    if (key_stride != 0 && b > 0) load_key(b);
    uint64_t acc[2][kVec] = {};
#pragma unroll
    for (int i = 0; i < D; ++i) {
      uint32_t e[kVec];
      load4(src[i] + b * src_stride[i], e);
      if (i > 0 && i % 4 == 0) {
#pragma unroll
        for (int c = 0; c < 2; ++c)
#pragma unroll
          for (int v = 0; v < kVec; ++v) acc[c][v] = reduce64(acc[c][v], red);
      }
#pragma unroll
      for (int c = 0; c < 2; ++c)
#pragma unroll
        for (int v = 0; v < kVec; ++v) acc[c][v] = mad_wide_u32(e[v], k[i][c][v], acc[c][v]);
    }
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int64_t o = ((b * 2 + c) * rows_total + row) * n + t0;
      uint32_t y[kVec];
#pragma unroll
      for (int v = 0; v < kVec; ++v) y[v] = reduce64(acc[c][v], red);
      if (MODDOWN) {
        uint32_t s[kVec];
        load4(sub + (sub_batched ? o : ((c * rows_total + row) * n + t0)), s);
#pragma unroll
        for (int v = 0; v < kVec; ++v)
          y[v] = mul_shoup(sub_mod(y[v], s[v], r.p), r.scale, r.scale_shoup, r.p);
      }
      *reinterpret_cast<uint4*>(out + o) = make_uint4(y[0], y[1], y[2], y[3]);
    }
  }
}

template <bool MODDOWN>
void launch_digits(int digits, dim3 grid, dim3 block, cudaStream_t stream, const uint32_t* x,
                   const uint32_t* key, const uint32_t* sub, uint32_t* out, int64_t batch,
                   bool x_batched, bool sub_batched, int lx, int log_n, int rows_total,
                   int64_t key_part, int64_t key_stride, const KeyProductPlan& plan) {
#define KEY_PRODUCT_CASE(D_)                                                                  \
  case D_:                                                                                    \
    key_product_kernel<D_, MODDOWN><<<grid, block, 0, stream>>>(                              \
        x, key, sub, out, batch, x_batched, sub_batched, lx, log_n, rows_total, key_part,      \
        key_stride, plan);                                                                    \
    break;
  switch (digits) {
    KEY_PRODUCT_CASE(1)
    KEY_PRODUCT_CASE(2)
    KEY_PRODUCT_CASE(3)
    KEY_PRODUCT_CASE(4)
    KEY_PRODUCT_CASE(5)
    KEY_PRODUCT_CASE(6)
    KEY_PRODUCT_CASE(7)
    KEY_PRODUCT_CASE(8)
  }
#undef KEY_PRODUCT_CASE
}

static_assert(kKeyProductMaxDigits == 8, "launch_digits instantiates 1..8 digits");

// --- The key product fused with ModDown's INTT and NTT rows phases (one ciphertext, N = 2^15, 2^16) ---
// The tile's two polynomials are the key parts c = 0, 1 of ciphertext b; its limb is output row
// j of the plan. at4 evaluates y[b, c, j] for both parts at 4 consecutive positions, as
// key_product_kernel does (the same sums and reductions, so the same bits), loading each digit
// word once for both parts.
struct KeyProductAt {
  const KeyProductData* a;
  const KeyProductPlan* plan;
  int64_t b;
  int j;

  template <int R>
  __device__ __forceinline__ void at4(int64_t pos, int i, uint32_t (&y)[2][R]) const {
    const int64_t n = int64_t{1} << a->log_n;
    const KeyProductRow& r = plan->row[j];
    const Reduce64 red{r.p, r.r32, r.r32_shoup, r.one_shoup};
    uint64_t acc[2][kVec] = {};
    // four digits at a time: their loads are all issued before the first multiply-add
    for (int i0 = 0; i0 < a->digits; i0 += 4) {
      uint32_t sv[4][kVec], kv[4][2][kVec];
#pragma unroll
      for (int ii = 0; ii < 4; ++ii) {
        const int d = i0 + ii;
        if (d < a->digits) {
          const int s = plan->source[d][j];
          const uint32_t* src = s < a->lx
              ? a->x + ((a->x_batched ? b : 0) * a->lx + s) * n
              : plan->conv[d] + ((plan->conv_batched[d] ? b : 0) * plan->conv_rows[d] + s - a->lx) * n;
          const uint32_t* k = a->key + b * a->key_stride + static_cast<int64_t>(plan->key_poly[d][j]) * n + pos;
          load4(src + pos, sv[ii]);
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            const uint4 k4 = __ldg(reinterpret_cast<const uint4*>(k + c * a->key_part * n));
            kv[ii][c][0] = k4.x, kv[ii][c][1] = k4.y, kv[ii][c][2] = k4.z, kv[ii][c][3] = k4.w;
          }
        } else {
#pragma unroll
          for (int w = 0; w < kVec; ++w) sv[ii][w] = 0, kv[ii][0][w] = 0, kv[ii][1][w] = 0;
        }
      }
      if (i0 > 0) {  // four products of residues below 2^31 fit 64 bits with a reduced sum
#pragma unroll
        for (int c = 0; c < 2; ++c)
#pragma unroll
          for (int w = 0; w < kVec; ++w) acc[c][w] = reduce64(acc[c][w], red);
      }
#pragma unroll
      for (int ii = 0; ii < 4; ++ii)
#pragma unroll
        for (int c = 0; c < 2; ++c)
#pragma unroll
          for (int w = 0; w < kVec; ++w) acc[c][w] = mad_wide_u32(sv[ii][w], kv[ii][c][w], acc[c][w]);
    }
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int w = 0; w < kVec; ++w) y[c][i + w] = reduce64(acc[c][w], red);
  }
};

// The key product at the positions of a thread's rows-phase registers, both key parts, computed
// before the rows' first round (its loads overlap the tile's) and kept in registers.
struct KeyProductRegisters {
  KeyProductAt kp;
  uint32_t y[2][ntt_cuda::R];  // [key part = tile polynomial p][register element i]

  template <typename PosOf>
  __device__ __forceinline__ void prepare(PosOf pos_of) {
#pragma unroll
    for (int i = 0; i < ntt_cuda::R; i += kVec) kp.at4(pos_of(i), i, y);
  }
};

// ModDown's last NTT (jax_fhe_key_inner_product_mod_down_ntt): the forward NTT of sub runs its
// columns phase into out as usual; its rows phase, instead of storing NTT(sub), stores
// (y - NTT(sub)) * scale. So NTT(sub) is never written and read back, and one launch goes.
struct KeyProductNttStore : KeyProductRegisters {
  template <int W>
  __device__ __forceinline__ void operator()(int p, int i, int64_t pos, uint32_t* d,
                                             const uint32_t (&v)[W]) const {
    const KeyProductRow& r = kp.plan->row[kp.j];
    uint32_t o[W];
#pragma unroll
    for (int w = 0; w < W; ++w)
      o[w] = mul_shoup(sub_mod(y[p][i + w], v[w], r.p), r.scale, r.scale_shoup, r.p);
    ntt_cuda::PlainStore{}(p, i, pos, d, o);
  }
};

// ModDown's first INTT (jax_fhe_key_inner_product_intt, the special rows): the inverse NTT's
// rows phase starts from the product instead of loading it, so y is never written and read
// back, and one launch goes.
struct KeyProductInttLoad : KeyProductRegisters {
  __device__ __forceinline__ uint32_t load1(int p, int i, const uint32_t*) const { return y[p][i]; }
  __device__ __forceinline__ uint4 load4(int p, int i, const uint32_t*) const {
    return make_uint4(y[p][i], y[p][i + 1], y[p][i + 2], y[p][i + 3]);
  }
};

// The fused rows phases for K2 = 8 (N = 2^15 and 2^16), one ciphertext: P = 2 (its key parts).
constexpr int kFusedK2 = 8;
// KeyProductRegisters::prepare takes the elements four at a time as consecutive positions: true
// of the forward's last round and the inverse's first when they span 2 or 3 stages.
static_assert(kFusedK2 % 3 != 1, "the edge radix-8 round must span at least 4 consecutive elements");

// INVERSE: ModDown's first INTT's rows phase (KeyProductInttLoad); else its last NTT's
// (KeyProductNttStore). Resident blocks per SM asked of the compiler: the inverse 3 (80
// registers), so that the 12 special rows of one ciphertext (384 blocks) run in one wave; at 2
// (126 registers, 1.45 waves) the fused key switch was slower than with the two kernels apart.
// H200, (48, 12, 4): 18.5-19.5 us against 13.5 + 8.9 apart. The forward takes 2 (126
// registers; at 3 it spills 84 B and took 72.1 against 68.5 us).
template <bool INVERSE, bool LAZY>
__global__ void __launch_bounds__(ntt_cuda::RowsGeometry<kFusedK2>::threads, INVERSE ? 3 : 2)
    key_product_rows_kernel(uint32_t* out, ntt_cuda::Tables t,
                            const __grid_constant__ KeyProductData a,
                            const __grid_constant__ KeyProductPlan plan) {
  using G = ntt_cuda::RowsGeometry<kFusedK2>;
  __shared__ uint32_t smem[G::template smem_words<2>];
  allow_dependents();
  wait_for_producer();
  const KeyProductAt kp{&a, &plan, t.entry0<2>(blockIdx.y) >> 1, t.limb(blockIdx.y) - plan.row0};
  if constexpr (INVERSE)
    ntt_cuda::rows_tile<kFusedK2, 2, true, LAZY, false>(out, out, t, blockIdx.x, blockIdx.y, smem,
                                                        ntt_cuda::PlainStore{},
                                                        KeyProductInttLoad{{kp, {}}});
  else
    ntt_cuda::rows_tile<kFusedK2, 2, false, LAZY, false>(out, out, t, blockIdx.x, blockIdx.y, smem,
                                                         KeyProductNttStore{{kp, {}}});
}

// Every plan's fused rows phase over one ciphertext (entries 0, 1).
void launch_key_product_rows(bool inverse, bool lazy, const uint32_t* x, const uint32_t* key,
                             uint32_t* out, ntt_cuda::Tables t, const KeyProductCall& c,
                             ffi::Span<const int32_t> source, ffi::Span<const int32_t> key_poly,
                             cudaStream_t stream) {
  using G = ntt_cuda::RowsGeometry<kFusedK2>;
  const KeyProductShape& s = c.s;
  const KeyProductData a{x, key, 0, s.key_part, static_cast<int>(s.lx), s.x_batched,
                         static_cast<int>(s.digits), t.log_n};
  const int n1 = (1 << t.log_n) >> kFusedK2;
  t.batch0 = 0;
  auto kernel = inverse ? (lazy ? key_product_rows_kernel<true, true> : key_product_rows_kernel<true, false>)
                        : (lazy ? key_product_rows_kernel<false, true> : key_product_rows_kernel<false, false>);
  for (int64_t row0 = 0; row0 < s.rows; row0 += kKeyProductRowsPerLaunch) {
    const KeyProductPlan plan = key_product_plan(c, source, key_poly, row0);
    t.limb0 = static_cast<int>(row0);
    t.limb_count = plan.rows;
    const dim3 grid(n1 / G::rows_per_block, static_cast<unsigned>(plan.rows));
    // dependent on the kernel launched just before (the forward's columns phase, ModUp's or
    // an earlier row chunk, which writes other rows, so the wait costs little)
    launch_kernel(true, kernel, grid, dim3(G::threads), 0, stream, out, t, a, plan);
  }
}

static_assert(sizeof(KeyProductPlan) <= 4000, "the plan travels as a kernel parameter");

// The product of a decoded call; sub (the ModDown variant's, with the shape decoded) or null.
void launch_key_product(cudaStream_t stream, const KeyProductCall& c, const uint32_t* x,
                        const uint32_t* key, const uint32_t* sub, uint32_t* out,
                        ffi::Span<const int32_t> source, ffi::Span<const int32_t> key_poly) {
  const KeyProductShape& s = c.s;
  if (s.batch == 0 || s.rows == 0) return;
  const int threads = static_cast<int>(std::min<int64_t>(256, s.n / kVec));
  const int log_n = log2_exact(s.n);
  for (int64_t row0 = 0; row0 < s.rows; row0 += kKeyProductRowsPerLaunch) {
    const KeyProductPlan plan = key_product_plan(c, source, key_poly, row0);
    const dim3 grid(static_cast<unsigned>(s.n / kVec / threads), static_cast<unsigned>(plan.rows));
    auto launch = sub ? launch_digits<true> : launch_digits<false>;
    launch(static_cast<int>(s.digits), grid, dim3(threads), stream, x, key, sub, out, s.batch,
           s.x_batched, s.sub_batched, static_cast<int>(s.lx), log_n, static_cast<int>(s.rows),
           s.key_part, s.key_batched ? s.key_polys * s.n : 0, plan);
  }
}

ffi::Error KeyProductCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                              ffi::Buffer<ffi::U32> key, ffi::RemainingArgs convs,
                              ffi::ResultBuffer<ffi::U32> out, ffi::Span<const int32_t> source,
                              ffi::Span<const int32_t> key_poly, int64_t key_part,
                              ffi::Span<const int64_t> moduli) {
  KeyProductCall c;
  if (auto e = decode_key_product_args(x, key, nullptr, convs, out->dimensions(), source, key_poly,
                                       key_part, moduli, {}, &c);
      e.failure())
    return e;
  launch_key_product(stream, c, x.typed_data(), key.typed_data(), nullptr, out->typed_data(),
                     source, key_poly);
  return launch_status("key_inner_product");
}

ffi::Error KeyProductModDownCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                                     ffi::Buffer<ffi::U32> key, ffi::Buffer<ffi::U32> sub,
                                     ffi::RemainingArgs convs, ffi::ResultBuffer<ffi::U32> out,
                                     ffi::Span<const int32_t> source,
                                     ffi::Span<const int32_t> key_poly, int64_t key_part,
                                     ffi::Span<const int64_t> moduli,
                                     ffi::Span<const int64_t> scale) {
  KeyProductCall c;
  if (auto e = decode_key_product_args(x, key, &sub, convs, out->dimensions(), source, key_poly,
                                       key_part, moduli, scale, &c);
      e.failure())
    return e;
  launch_key_product(stream, c, x.typed_data(), key.typed_data(), sub.typed_data(),
                     out->typed_data(), source, key_poly);
  return launch_status("key_inner_product_mod_down");
}

// The transform's two phases from src into o (then in place) over every entry of o (2 per
// ciphertext): P = 4 where the entries allow, else 2; entries chunked so grid.y stays within
// 65535.
void two_phases(bool inverse, bool lazy, const uint32_t* src, uint32_t* o, const PolyShape& ps,
                ntt_cuda::Tables t, cudaStream_t stream) {
  const int64_t entries = ps.polys / ps.limbs;  // even
  const int P = entries % 4 == 0 ? 4 : 2;
  const int64_t step = std::max<int64_t>(1, 65535 / ps.limbs) * P;
  t.limb0 = 0;
  t.limb_count = static_cast<int>(ps.limbs);
  for (int64_t e0 = 0; e0 < entries; e0 += step) {
    const int64_t groups = std::min(step, entries - e0) / P * ps.limbs;
    t.batch0 = e0;
    // forward: columns then rows; inverse: rows then columns
    ntt_cuda::launch_ntt_phase(inverse, !inverse, P, lazy, src, o, groups, t, stream);
    ntt_cuda::launch_ntt_phase(inverse, inverse, P, lazy, o, o, groups, t, stream);
  }
}

// Where the transform and the key product are one kernel: one ciphertext (the fused kernel
// reads each key polynomial once per ciphertext, the key product kernel once per launch: H100,
// (48, 12, 4) key switch at batch 8, 659 us fused against 185 + 317 us apart) and K2 = 8.
bool fuse_rows(const KeyProductShape& s, const PolyShape& ps) {
  return s.batch == 1 && ps.log_n - ps.log_n / 2 == kFusedK2;
}

ffi::Error KeyProductModDownNttCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                                        ffi::Buffer<ffi::U32> key, ffi::Buffer<ffi::U32> sub,
                                        ffi::Buffer<ffi::S32> rows, ffi::Buffer<ffi::U32> moduli_tab,
                                        ffi::Buffer<ffi::U32> tw, ffi::Buffer<ffi::U32> tw_shoup,
                                        ffi::RemainingArgs convs, ffi::ResultBuffer<ffi::U32> out,
                                        ffi::Span<const int32_t> source,
                                        ffi::Span<const int32_t> key_poly, int64_t key_part,
                                        ffi::Span<const int64_t> moduli,
                                        ffi::Span<const int64_t> scale, bool lazy) {
  KeyProductCall c;
  if (auto e = decode_key_product_ntt_args(x, key, sub, convs, out->dimensions(), source, key_poly,
                                           key_part, moduli, scale, rows, moduli_tab, tw, tw_shoup, &c);
      e.failure())
    return e;
  if (c.s.batch == 0 || c.s.rows == 0) return ffi::Error::Success();
  ntt_cuda::Tables t{rows.typed_data(), moduli_tab.typed_data(), tw.typed_data(), tw_shoup.typed_data(),
                     nullptr, nullptr, static_cast<int>(c.ps.limbs), c.ps.log_n, 0,
                     static_cast<int>(c.ps.limbs), 0};
  uint32_t* o = out->typed_data();
  if (!fuse_rows(c.s, c.ps)) {  // the transform, then the ModDown key product reading it
    two_phases(false, lazy, sub.typed_data(), o, c.ps, t, stream);
    launch_key_product(stream, c, x.typed_data(), key.typed_data(), o, o, source, key_poly);
  } else {
    ntt_cuda::launch_ntt_phase(false, true, 2, lazy, sub.typed_data(), o, c.ps.limbs, t, stream);
    launch_key_product_rows(false, lazy, x.typed_data(), key.typed_data(), o, t, c, source,
                            key_poly, stream);
  }
  return launch_status("key_inner_product_mod_down_ntt");
}

ffi::Error KeyProductInttCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                                  ffi::Buffer<ffi::U32> key, ffi::Buffer<ffi::S32> rows,
                                  ffi::Buffer<ffi::U32> moduli_tab, ffi::Buffer<ffi::U32> itw,
                                  ffi::Buffer<ffi::U32> itw_shoup, ffi::Buffer<ffi::U32> n_inv,
                                  ffi::Buffer<ffi::U32> n_inv_shoup, ffi::RemainingArgs convs,
                                  ffi::ResultBuffer<ffi::U32> out, ffi::Span<const int32_t> source,
                                  ffi::Span<const int32_t> key_poly, int64_t key_part,
                                  ffi::Span<const int64_t> moduli, bool lazy) {
  KeyProductCall c;
  if (auto e = decode_key_product_intt_args(x, key, convs, out->dimensions(), source, key_poly,
                                            key_part, moduli, rows, moduli_tab, itw, itw_shoup,
                                            n_inv, n_inv_shoup, &c);
      e.failure())
    return e;
  if (c.s.batch == 0 || c.s.rows == 0) return ffi::Error::Success();
  ntt_cuda::Tables t{rows.typed_data(), moduli_tab.typed_data(), itw.typed_data(),
                     itw_shoup.typed_data(), n_inv.typed_data(), n_inv_shoup.typed_data(),
                     static_cast<int>(c.ps.limbs), c.ps.log_n, 0, static_cast<int>(c.ps.limbs), 0};
  uint32_t* o = out->typed_data();
  if (!fuse_rows(c.s, c.ps)) {  // the key product, then the transform in place
    launch_key_product(stream, c, x.typed_data(), key.typed_data(), nullptr, o, source, key_poly);
    two_phases(true, lazy, o, o, c.ps, t, stream);
  } else {
    launch_key_product_rows(true, lazy, x.typed_data(), key.typed_data(), o, t, c, source,
                            key_poly, stream);
    ntt_cuda::launch_ntt_phase(true, true, 2, lazy, o, o, c.ps.limbs, t, stream);
  }
  return launch_status("key_inner_product_intt");
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(KeyProductCuda, KeyProductCudaImpl,
                              bind_key_product(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(KeyProductModDownCuda, KeyProductModDownCudaImpl,
                              bind_key_product_mod_down(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(KeyProductModDownNttCuda, KeyProductModDownNttCudaImpl,
                              bind_key_product_mod_down_ntt(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(KeyProductInttCuda, KeyProductInttCudaImpl,
                              bind_key_product_intt(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
                              {ffi::Traits::kCmdBufferCompatible});

}  // namespace jax_fhe
