// Device code shared by the CUDA NTT kernels (ntt_cuda.cu: the two-phase and one-block kernels,
// the tail and the FFI handlers; ntt_cluster_dispatch.cu and its headers: the sm_90 single-pass
// cluster kernel; key_product_cuda.cu: the key product fused with a rows phase). Design:
// docs/kernels.md.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common.h"
#include "modarith.h"
#include "ntt_args.h"
#include "tuning.h"

namespace jax_fhe {
namespace ntt_cuda {

constexpr int R = 8;        // elements per thread in the two-phase kernels (radix-8 rounds)

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
  // 0, or the launch's group count G: the plain phase kernels then take their groups in
  // reverse, block y running group G - 1 - y (group_of). A transform's second phase runs so
  // (launch_columns / launch_rows), so that it starts with the groups the first phase wrote
  // last, which are still in L2.
  unsigned reversed_groups;
  __device__ __forceinline__ unsigned group_of(unsigned block_y) const {
    return reversed_groups ? reversed_groups - 1 - block_y : block_y;
  }
  // first of the block's P polynomials; the others follow at a stride of `limbs` polynomials
  // of polynomial group `group` (by default the block's, blockIdx.y)
  template <int P>
  __device__ __forceinline__ int64_t poly0(unsigned group) const {
    return entry0<P>(group) * limbs + limb(group);
  }
  // batch entry of the group's first polynomial
  template <int P>
  __device__ __forceinline__ int64_t entry0(unsigned group) const {
    return batch0 + static_cast<int64_t>(group / static_cast<unsigned>(limb_count)) * P;
  }
  template <int P>
  __device__ __forceinline__ int64_t poly0() const { return poly0<P>(blockIdx.y); }
  // the group's limb (32-bit arithmetic: poly0() % limbs would be a 64-bit division)
  __device__ __forceinline__ int limb(unsigned group) const {
    return limb0 + static_cast<int>(group % static_cast<unsigned>(limb_count));
  }
  __device__ __forceinline__ int limb() const { return limb(blockIdx.y); }
};

// 2q for q < 2^31, computed so that ptxas keeps it in a register: from a plain 2 * q it
// rematerialises a - 2q as IMAD(q, -2, a) and x - t + 2q as LEA + IADD3, which costs the lazy
// butterfly an instruction and an IMAD-pipe slot (on sm_90a, 15% of the NTT kernels'
// instructions: 1728 -> 1472 in the forward row kernel at P = 4). The funnel shift
// (q << 1 | q >> 31) equals 2q because q < 2^31.
__device__ __forceinline__ uint32_t register_two_q(uint32_t q) {
  uint32_t two_q;
  asm("shf.l.wrap.b32 %0, %1, %1, 1;" : "=r"(two_q) : "r"(q));
  return two_q;
}

// Shoup companions floor(w 2^32 / q) of run-time values w < q modulo one q < 2^31, without a
// division each: v = floor(2^64 / q) once (a double division, off by at most 1), then
// ws = floor(w v / 2^32) is within 1 of the companion, and the sign and size of the remainder
// w 2^32 - ws q (in (-q, 2q)) say which way to correct it.
struct Companions {
  uint32_t q, v_lo, v_hi;
  __device__ __forceinline__ explicit Companions(uint32_t q_) : q(q_) {
    const uint64_t v = static_cast<uint64_t>(18446744073709551616.0 / static_cast<double>(q_));
    v_lo = static_cast<uint32_t>(v), v_hi = static_cast<uint32_t>(v >> 32);
  }
  __device__ __forceinline__ uint32_t operator()(uint32_t w) const {
    uint32_t ws = __umulhi(w, v_lo) + w * v_hi;
    const uint32_t lo = ws * q, hi = __umulhi(ws, q);
    if (hi > w || (hi == w && lo != 0)) ws -= 1;  // ws q > w 2^32
    else if (0u - lo >= q) ws += 1;               // the remainder (below 2^32) is q or more
    return ws;
  }
};

// The twiddles of one row of a rows phase (K2 stages over rows of 2^K2, table row W = n1 + row),
// computed by the row's warp into dst[1 .. 2^K2) as (w, w') pairs at heap index 2^sigma + g
// (local stage sigma, group g), the columns phase's indexing, instead of read from the N-word
// tables (as many bytes as the row's data: the phase then moved half again as much). With psi
// the table's root and g < 2^sigma, the bit fields of (W << sigma) + g are disjoint, so
//   psi^brev((W << sigma) + g) = psi^brev(W << sigma) * psi^brev(g):
// the stage's group-0 twiddle (K2 words per row) times table entry g < 2^(K2-1) (shared by all
// rows, from L1/L2). K2 = 8: a row is one warp (32 threads of 8 elements).
template <int K2>
__device__ __forceinline__ void compute_row_twiddles(uint2* dst, const uint32_t* __restrict__ tw,
                                                     const uint32_t* __restrict__ tws, uint32_t W,
                                                     uint32_t q, int lane) {
  static_assert(K2 == 8, "a row is one warp, one base per lane");
  const uint32_t base = lane < K2 ? __ldg(tw + (W << lane)) : 0u;
  const Companions companion(q);
#pragma unroll
  for (int k = 0; k < (1 << K2) / 32; ++k) {
    const int p = lane + 32 * k;
    const int sigma = 31 - __clz(p | 1);
    const int g = p - (1 << sigma);
    const uint32_t b = __shfl_sync(0xffffffffu, base, sigma);
    if (p == 0) continue;  // (heap slot 0 is unused)
    const uint32_t w = mul_shoup(b, __ldg(tw + g), __ldg(tws + g), q);
    dst[p] = make_uint2(w, companion(w));
  }
  __syncwarp();
}

// Geometry of one round: local stages [sig_lo, sig_lo + rho) of a size-2^K sub-transform whose
// threads hold 2^LOGR elements each. The thread owns G = 2^LOGR >> rho units of 2^rho elements;
// unit v's elements sit at u = base(v) + e * tau, tau = 2^K >> (sig_lo + rho).
template <int LOGR, int K>
struct Round {
  static constexpr int kR = 1 << LOGR;
  int sig_lo, rho;
  __device__ __forceinline__ int tau() const { return (1 << K) >> (sig_lo + rho); }
  __device__ __forceinline__ int index(int tt, int gi, int e) const {
    const int units_per_group = (1 << K) / kR;  // == threads per sub-transform
    const int v = gi * units_per_group + tt;
    const int t = tau();
    const int low = v & (t - 1);
    const int high = v / t;
    return ((high * t) << rho) + low + e * t;
  }
};

template <int LOGR, int K>
__device__ __forceinline__ Round<LOGR, K> forward_round(int rd) {
  int lo = LOGR * rd;
  return Round<LOGR, K>{lo, min(LOGR, K - lo)};
}

// Inverse rounds are the forward rounds in reverse order.
template <int LOGR, int K>
__device__ __forceinline__ Round<LOGR, K> inverse_round(int rd) {
  constexpr int kRounds = (K + LOGR - 1) / LOGR;
  return forward_round<LOGR, K>(kRounds - 1 - rd);
}

// One round of butterflies on the thread's registers. For unit v (high = v / tau) at local
// stage sigma = sig_lo + d, the group index u >> (K - sigma) equals (high << d) + (e >> (rho - d)),
// so each distinct twiddle is loaded once per unit.
// SMEM_TW: tw holds the sub-transform's (w, w') pairs in shared memory at heap index
// (W << sigma) + group (compute_row_twiddles, W = 1); tws is unused.
template <int LOGR, int K, int P, bool INVERSE, bool LAZY, bool SMEM_TW = false>
__device__ __forceinline__ void compute_round(uint32_t (&x)[P][1 << LOGR], const Round<LOGR, K>& rd,
                                              int tt, uint32_t W, const uint32_t* __restrict__ tw,
                                              const uint32_t* __restrict__ tws, uint32_t q) {
  constexpr int kR = 1 << LOGR;
  const int span = 1 << rd.rho;
  const int groups = kR >> rd.rho;
  const int units_per_group = (1 << K) / kR;
  const uint32_t two_q = register_two_q(q);
#pragma unroll
  for (int qs = 0; qs < LOGR; ++qs) {
    if (qs >= rd.rho) break;
    const int d = INVERSE ? rd.rho - 1 - qs : qs;  // sigma - sig_lo
    const int sigma = rd.sig_lo + d;
    const int h = 1 << (rd.rho - 1 - d);           // pair distance in e
#pragma unroll
    for (int gi = 0; gi < kR; ++gi) {
      if (gi >= groups) break;
      const uint32_t high = static_cast<uint32_t>(gi * units_per_group + tt) / rd.tau();
      const uint32_t tw0 = (W << sigma) + (high << d);
      // fixed trip counts so the loops unroll completely and x[] stays in registers
#pragma unroll
      for (int j = 0; j < kR / 2; ++j) {
        if (j >= (1 << d)) break;
        uint32_t w, ws;
        if constexpr (SMEM_TW) {
          const uint2 v = reinterpret_cast<const uint2*>(tw)[tw0 + j];
          w = v.x, ws = v.y;
        } else {
          w = __ldg(tw + tw0 + j), ws = __ldg(tws + tw0 + j);
        }
#pragma unroll
        for (int ee = 0; ee < kR; ++ee) {
          if (ee >= (1 << (rd.rho - d))) break;
          const int e = (j << (rd.rho - d)) + ee;
          if (e & h) continue;
#pragma unroll
          for (int p = 0; p < P; ++p) {
            uint32_t& a = x[p][gi * span + e];
            uint32_t& b = x[p][gi * span + e + h];
            if (INVERSE) {
              if (LAZY) gs_butterfly_lazy(a, b, w, ws, q, two_q); else gs_butterfly(a, b, w, ws, q);
            } else {
              if (LAZY) ct_butterfly_lazy(a, b, w, ws, q, two_q); else ct_butterfly(a, b, w, ws, q);
            }
          }
        }
      }
    }
  }
}

// Run all rounds of a size-2^K sub-transform on P polynomials. LoadG/StoreG map (polynomial p,
// local index u) to the phase's source and destination (global memory, or for the cluster
// kernel a shared-memory tile); Smem maps them to a shared-memory slot for the exchanges
// between rounds. AfterLoad runs once the first round's loads are issued. With CONTIG, a round
// whose units hold runs of consecutive elements moves them as 16-byte vectors (LoadG4/StoreG4).
// The loads and stores also get the element's index i in the thread's registers (the first of
// four for LoadG4/StoreG4): a fused producer or consumer keeps per-element values in registers
// under that index.
template <int LOGR, int K, int P, bool INVERSE, bool LAZY, bool CONTIG, bool SMEM_TW = false,
          typename LoadG, typename StoreG, typename Smem, typename LoadG4, typename StoreG4,
          typename AfterLoad>
__device__ __forceinline__ void run_rounds(int tt, uint32_t W, const uint32_t* tw,
                                           const uint32_t* tws, uint32_t q, uint32_t* smem,
                                           LoadG load_g, StoreG store_g, Smem sidx,
                                           LoadG4 load_g4, StoreG4 store_g4, AfterLoad after_load) {
  constexpr int kR = 1 << LOGR;
  constexpr int kRounds = (K + LOGR - 1) / LOGR;
  uint32_t x[P][kR];
  auto round_at = [](int rd) {
    return INVERSE ? inverse_round<LOGR, K>(rd) : forward_round<LOGR, K>(rd);
  };
  {
    const Round<LOGR, K> r0 = round_at(0);
    const int span = 1 << r0.rho;
    if (CONTIG && r0.tau() == 1 && span >= 4) {
#pragma unroll
      for (int i4 = 0; i4 < kR / 4; ++i4) {
        const int i = 4 * i4;
#pragma unroll
        for (int p = 0; p < P; ++p) {
          const uint4 v = load_g4(p, r0.index(tt, i / span, i % span), i);
          x[p][i] = v.x; x[p][i + 1] = v.y; x[p][i + 2] = v.z; x[p][i + 3] = v.w;
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < kR; ++i) {
#pragma unroll
        for (int p = 0; p < P; ++p) x[p][i] = load_g(p, r0.index(tt, i / span, i % span), i);
      }
    }
  }
  after_load();
#pragma unroll
  for (int rd = 0; rd < kRounds; ++rd) {
    const Round<LOGR, K> cur = round_at(rd);
    compute_round<LOGR, K, P, INVERSE, LAZY, SMEM_TW>(x, cur, tt, W, tw, tws, q);
    const int span = 1 << cur.rho;
    if (rd + 1 < kRounds) {
#pragma unroll
      for (int i = 0; i < kR; ++i) {
#pragma unroll
        for (int p = 0; p < P; ++p) smem[sidx(p, cur.index(tt, i / span, i % span))] = x[p][i];
      }
      __syncthreads();
      const Round<LOGR, K> nxt = round_at(rd + 1);
      const int nspan = 1 << nxt.rho;
#pragma unroll
      for (int i = 0; i < kR; ++i) {
#pragma unroll
        for (int p = 0; p < P; ++p) x[p][i] = smem[sidx(p, nxt.index(tt, i / nspan, i % nspan))];
      }
      __syncthreads();
    } else if (CONTIG && cur.tau() == 1 && span >= 4) {
#pragma unroll
      for (int i4 = 0; i4 < kR / 4; ++i4) {
        const int i = 4 * i4;
#pragma unroll
        for (int p = 0; p < P; ++p)
          store_g4(p, cur.index(tt, i / span, i % span),
                   make_uint4(x[p][i], x[p][i + 1], x[p][i + 2], x[p][i + 3]), i);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kR; ++i) {
#pragma unroll
        for (int p = 0; p < P; ++p) store_g(p, cur.index(tt, i / span, i % span), x[p][i], i);
      }
    }
  }
}

// Global loads of a phase. COHERENT bypasses L1 (ld.global.cg): the streamed kernel's second
// phase reads data that other SMs wrote during the same launch.
template <bool COHERENT>
__device__ __forceinline__ uint32_t load_word(const uint32_t* p) {
  if (COHERENT) return __ldcg(p);
  return *p;
}
template <bool COHERENT>
__device__ __forceinline__ uint4 load_word4(const uint32_t* p) {
  if (COHERENT) return __ldcg(reinterpret_cast<const uint4*>(p));
  return *reinterpret_cast<const uint4*>(p);
}

struct NoHook {
  __device__ __forceinline__ void operator()() const {}
};


// ---------------------------------------------------------------------------------------------
// The two-phase transform's tiles (ntt_cuda.cu runs them; key_product_cuda.cu fuses the rows
// phase with the key product). Geometry and semantics: ntt_cuda.cu's header comment.

// Phase "columns": stages 0..K1-1 (forward) or their inverse, plus the N^-1 scaling. One tile
// (kCols columns of one group of P polynomials: kColumnsPerTile, tuning.h, at P = 4 and N = 2^16
// a 64 KB tile of 512 threads); the kernels below and the streamed kernel (ntt_stream_kernel)
// run it, the latter with 8 columns so that its block has 256 threads in both phases.
template <int K1, int P, int COLS = kColumnsPerTile>
struct ColsGeometry {
  static constexpr int kCols = COLS;
  static constexpr int threads = (1 << K1) / R * kCols;
  static constexpr int smem_words = P * (1 << K1) * kCols;
};

template <int K1, int P, bool INVERSE, bool LAZY, bool COHERENT, int COLS = kColumnsPerTile>
__device__ __forceinline__ void columns_tile(const uint32_t* src, uint32_t* dst,  // may alias
                                             const Tables& t, int tile, unsigned group,
                                             uint32_t* smem) {
  constexpr int n1 = 1 << K1;
  constexpr int kCols = ColsGeometry<K1, P, COLS>::kCols;
  // K1 = floor(log N / 2) = kMaxLogN / 2 only at the largest size (kMaxLogN is even): there the
  // row length is a compile-time constant, so each load and store of the tile is one base
  // register plus an immediate offset (a runtime n2 cost a 64-bit IMAD.WIDE per access: 64 of
  // the forward P = 4 kernel's 1302 instructions)
  static_assert(kMaxLogN % 2 == 0, "K1 == kMaxLogN / 2 must imply log N == kMaxLogN");
  const int n2 = K1 == kMaxLogN / 2 ? 1 << (kMaxLogN - K1) : (1 << t.log_n) >> K1;
  const int64_t poly = t.poly0<P>(group);
  const int row = t.rows[t.limb(group)];
  const uint32_t q = t.moduli[row];
  const int64_t N = int64_t{1} << t.log_n;
  const int64_t stride = t.limbs * N;  // between the block's P polynomials
  const uint32_t* tw = t.tw + row * N;
  const uint32_t* tws = t.tw_shoup + row * N;
  const int c = threadIdx.x % kCols;
  const int tt = threadIdx.x / kCols;
  const int64_t base = poly * N + static_cast<int64_t>(tile) * kCols + c;
  const uint32_t* s = src + base;
  uint32_t* d = dst + base;
  uint32_t scale = 0, scale_s = 0;
  if (INVERSE) {
    scale = t.scale[row];
    scale_s = t.scale_shoup[row];
  }
  // forward phase 1 leaves lazy values for phase 2; the inverse ends here: scale by N^-1 and
  // reduce (the Shoup product accepts any 32-bit input)
  run_rounds<3, K1, P, INVERSE, LAZY, false>(
      tt, 1u, tw, tws, q, smem,
      [&](int p, int u, int) { return load_word<COHERENT>(s + p * stride + static_cast<int64_t>(u) * n2); },
      [&](int p, int u, uint32_t v, int) {
        if (INVERSE) v = mul_shoup(v, scale, scale_s, q);
        d[p * stride + static_cast<int64_t>(u) * n2] = v;
      },
      [&](int p, int u) { return (p * n1 + u) * kCols + c; }, [](int, int, int) { return uint4{}; },
      [](int, int, uint4, int) {}, NoHook{});
}

// Phase "rows": stages K1..logN-1 (forward) or their inverse. One tile = rows_per_block rows of
// one group of P polynomials.
template <int K2>
struct RowsGeometry {
  static constexpr int n2 = 1 << K2;
  static constexpr int threads_per_row = n2 / R;
  static constexpr int rows_per_block = (2048 / n2) < 32 ? (2048 / n2) : 32;
  static constexpr int threads = rows_per_block * threads_per_row;
  static constexpr int padded = n2 + n2 / 32;  // one pad word per 32 avoids bank conflicts
  template <int P>
  static constexpr int smem_words = P * rows_per_block * padded;
};

// Where the rows phase puts its (canonical) results: W = 1 or 4 consecutive values of register
// element i (and up) of polynomial p of the group, at position `pos` within the polynomial, whose
// place in the destination is `d`. The plain transform stores them; a fused consumer
// (key_product_cuda.cu: ModDown's last NTT with the key product) combines them first. Before the
// first round, once the tile's loads are issued, prepare(pos_of) lets the consumer start its own
// loads: pos_of(i) is the position element i will be stored at.
struct PlainStore {
  template <typename PosOf>
  __device__ __forceinline__ void prepare(PosOf) {}
  template <int W>
  __device__ __forceinline__ void operator()(int /*p*/, int /*i*/, int64_t /*pos*/, uint32_t* d,
                                             const uint32_t (&v)[W]) const {
    if constexpr (W == 4) *reinterpret_cast<uint4*>(d) = make_uint4(v[0], v[1], v[2], v[3]);
    else d[0] = v[0];
  }
};

// Where the rows phase gets its input: W = 1 or 4 consecutive words of register element i (and
// up) of polynomial p, whose place in the source is `s`. The plain transform loads them; a
// fused producer (key_product_cuda.cu: the key product before ModDown's INTT) computes them:
// prepare(pos_of) runs before the first load, pos_of(i) being element i's position.
template <bool COHERENT>
struct GlobalLoad {
  template <typename PosOf>
  __device__ __forceinline__ void prepare(PosOf) {}
  __device__ __forceinline__ uint32_t load1(int /*p*/, int /*i*/, const uint32_t* s) const {
    return load_word<COHERENT>(s);
  }
  __device__ __forceinline__ uint4 load4(int /*p*/, int /*i*/, const uint32_t* s) const {
    return load_word4<COHERENT>(s);
  }
};

// The P polynomials a rows tile transforms, which share one prime: P consecutive batch entries
// of one limb (every plain launch: a group is blockIdx.y as Tables lays it out), or a gathered
// group of limbs that use the same table row (RowGroups below). offset(p) is member p's distance
// in words from member 0.
struct UniformMembers {
  int64_t poly;    // member 0's polynomial index
  int limb;        // its limb (selects the table row)
  int64_t stride;  // words between members
  template <int P>
  __device__ __forceinline__ static UniformMembers at(const Tables& t, unsigned group) {
    return {t.poly0<P>(group), t.limb(group), static_cast<int64_t>(t.limbs) << t.log_n};
  }
  __device__ __forceinline__ int64_t offset(int p) const { return p * stride; }
};

// Limbs of one batch entry that use the same table row, in groups of up to kRowGroupSize (a
// forward NTT whose rows repeat: ModUp's stacked conversions, where each prime recurs once per
// digit that lacks it). Passed by value as a kernel parameter; limb[g][p] < 0 pads a group of
// fewer limbs. The handler builds it from the row_groups attribute (ntt_args.h: kRowGroupSize).
constexpr int kMaxRowGroups = 256;  // 2 KB of kernel parameters; a call with more runs ungrouped
struct RowGroups {
  int count;
  int16_t limb[kMaxRowGroups][kRowGroupSize];
};

// The first P limbs of group gi of batch entry `entry` (the tile runs exactly the group's limbs:
// the rows phase is issue-bound, so a padded member would cost as much as a real one).
template <int P>
struct GatheredMembers {
  int64_t poly;
  int limb;
  int64_t off[P];
  __device__ __forceinline__ static GatheredMembers at(const Tables& t, const RowGroups& g,
                                                       int64_t entry, int gi) {
    GatheredMembers m;
    m.limb = g.limb[gi][0];
    m.poly = entry * t.limbs + m.limb;
#pragma unroll
    for (int p = 0; p < P; ++p)  // negative where a group lists its limbs out of order
      m.off[p] = static_cast<int64_t>(g.limb[gi][p] - m.limb) * (int64_t{1} << t.log_n);
    return m;
  }
  __device__ __forceinline__ int64_t offset(int p) const { return off[p]; }
};

// The rows tile of the polynomials `m` (UniformMembers or GatheredMembers<P>). SMEM_TW: the
// rows' twiddles are computed into tw_smem (rows_per_block x 2^K2 pairs; compute_row_twiddles,
// K2 = 8 so that a row is one warp) instead of read from the tables.
template <int K2, int P, bool INVERSE, bool LAZY, bool COHERENT, bool SMEM_TW = false,
          typename Members, typename Out = PlainStore, typename In = GlobalLoad<COHERENT>>
__device__ __forceinline__ void rows_tile_of(const uint32_t* src, uint32_t* dst,  // may alias
                                             const Tables& t, int tile, const Members& m,
                                             uint32_t* smem, Out out = {}, In in = {},
                                             uint2* tw_smem = nullptr) {
  static_assert(!SMEM_TW || K2 == 8, "computed row twiddles: one warp per row");
  using G = RowsGeometry<K2>;
  const int n1 = (1 << t.log_n) >> K2;
  const int row_tab = t.rows[m.limb];
  const uint32_t q = t.moduli[row_tab];
  const int64_t N = int64_t{1} << t.log_n;
  const uint32_t* tw = t.tw + row_tab * N;
  const uint32_t* tws = t.tw_shoup + row_tab * N;
  const int r = threadIdx.x / G::threads_per_row;
  const int tt = threadIdx.x % G::threads_per_row;
  const int mrow = tile * G::rows_per_block + r;  // matrix row within the polynomial
  const int64_t row_pos = static_cast<int64_t>(mrow) * G::n2;
  const int64_t base = m.poly * N + row_pos;
  const uint32_t* s = src + base;
  uint32_t* d = dst + base;
  uint32_t* sm = smem + r * G::padded;
  constexpr int kPolySlots = G::rows_per_block * G::padded;
  constexpr int kRounds = (K2 + 2) / 3;
  const Round<3, K2> first = INVERSE ? inverse_round<3, K2>(0) : forward_round<3, K2>(0);
  const Round<3, K2> last = INVERSE ? inverse_round<3, K2>(kRounds - 1) : forward_round<3, K2>(kRounds - 1);
  // position within the polynomial of register element i before the first round / after the last
  auto position = [&](const Round<3, K2>& rd, int i) {
    const int span = 1 << rd.rho;
    return row_pos + rd.index(tt, i / span, i % span);
  };
  // the forward transform ends here: reduce lazy values from [0, 4q) to [0, q)
  auto finish = [&](uint32_t v) {
    if (LAZY && !INVERSE) v = csub(csub(v, 2 * q), q);
    return v;
  };
  uint2* row_tw = SMEM_TW ? tw_smem + r * G::n2 : nullptr;
  in.prepare([&](int i) { return position(first, i); });
  run_rounds<3, K2, P, INVERSE, LAZY, true, SMEM_TW>(
      tt, SMEM_TW ? 1u : static_cast<uint32_t>(n1 + mrow),
      SMEM_TW ? reinterpret_cast<const uint32_t*>(row_tw) : tw, tws, q, sm,
      [&](int p, int u, int i) { return in.load1(p, i, s + m.offset(p) + u); },
      [&](int p, int u, uint32_t v, int i) {
        const uint32_t w[1] = {finish(v)};
        out(p, i, row_pos + u, d + m.offset(p) + u, w);
      },
      [](int p, int u) { return p * kPolySlots + u + (u >> 5); },
      [&](int p, int u, int i) { return in.load4(p, i, s + m.offset(p) + u); },
      [&](int p, int u, uint4 v, int i) {
        const uint32_t w[4] = {finish(v.x), finish(v.y), finish(v.z), finish(v.w)};
        out(p, i, row_pos + u, d + m.offset(p) + u, w);
      },
      [&] {
        if constexpr (SMEM_TW) compute_row_twiddles<K2>(row_tw, tw, tws, n1 + mrow, q, tt);
        out.prepare([&](int i) { return position(last, i); });
      });
}

// The rows tile of polynomial group `group` as Tables lays the groups out.
template <int K2, int P, bool INVERSE, bool LAZY, bool COHERENT, bool SMEM_TW = false,
          typename Out = PlainStore, typename In = GlobalLoad<COHERENT>>
__device__ __forceinline__ void rows_tile(const uint32_t* src, uint32_t* dst,  // may alias
                                          const Tables& t, int tile, unsigned group,
                                          uint32_t* smem, Out out = {}, In in = {},
                                          uint2* tw_smem = nullptr) {
  rows_tile_of<K2, P, INVERSE, LAZY, COHERENT, SMEM_TW>(src, dst, t, tile, UniformMembers::at<P>(t, group),
                                                        smem, out, in, tw_smem);
}


// The single-pass cluster kernel (ntt_cluster_dispatch.cu; for N = 2^16 launches of at least
// kClusterMinPolys polynomials with primes below 2^30 on sm_90+): whether it was launched. False
// where it does not apply or cannot launch; the caller then runs the two-phase kernels.
bool run_ntt_cluster(cudaStream_t stream, const PolyShape& s, const uint32_t* src, uint32_t* dst,
                     const Tables& t, bool inverse, bool lazy);

// ntt_cuda.cu: the streamed kernel (N = 2^16, lazy, groups of 4 polynomials) as the cluster
// kernel's tail: the launch's limb-major items [item0, item0 + items) (item = limb * batch +
// entry; item0, items and batch multiples of 4), on `free_sms` SMs' worth of blocks. With
// `launch` false it only checks that it applies (before the cluster kernel is launched); with
// `launch` true it launches the kernel as dependent on the one before it. False where it does
// not apply.
bool ntt_stream_tail(bool inverse, bool launch, const uint32_t* src, uint32_t* dst, int64_t item0,
                     int64_t items, int64_t batch, const Tables& t, int64_t free_sms,
                     cudaStream_t stream);

// ntt_cuda.cu: one phase of the two-phase transform (log N >= 13) over `groups` groups of P (1,
// 2 or 4) polynomials, as the NTT handlers launch it: the forward columns (stages 0..K1-1) or
// rows (K1..logN-1, reduced to [0, q) on the store), or the inverse rows (first) or columns
// (with the N^-1 scaling). A second phase is launched as dependent on the first.
void launch_ntt_phase(bool inverse, bool columns, int p, bool lazy, const uint32_t* src,
                      uint32_t* dst, int64_t groups, const Tables& t, cudaStream_t stream);

}  // namespace ntt_cuda
}  // namespace jax_fhe
