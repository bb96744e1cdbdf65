// The single-pass cluster NTT (N = 2^16, sm_90): geometry, shared-memory layouts, the PTX it
// needs (cluster barriers, mbarriers, distributed shared memory, TMA copies) and its twiddle
// tables and butterflies. Included by ntt_cluster_dispatch.cu only (its kernel:
// ntt_cluster_kernel.cuh). Design and measurements: docs/kernels.md.
//
// Geometry. N = 256 x 256, row-major (index i = 256 r + c). The forward transform's stages 0..7
// pair elements of one column, stages 8..15 elements of one row (ntt_cuda.cu's header). A
// thread-block cluster of 8 CTAs holds one polynomial at a time in 16 slices of 16 columns (the
// column phase) or 16 rows (the row phase). Each CTA is two halves of 256 threads with their own
// named barriers: its first half runs the first phase of slices 2 k and 2 k + 1 (CTA k), its
// second half the second phase of the same two slices one item behind, so that one half's waits
// are filled with the other's butterflies. Each thread holds 16 elements and runs 4 stages in
// registers (radix-16 rounds A, B: stages 0..7; C, D: stages 8..15); the two rounds of a phase
// exchange through the slice's own tile. The first phase's results go straight into the owners'
// second-phase tiles through distributed shared memory, counted on the owner's mbarrier: in the
// forward as one 1 KB block per (sender slice, owner slice) copied by the TMA engine
// (cp.async.bulk), in the inverse by st.async per element.
//
// Persistence. The grid is as many clusters as fit (15 on an H100 or H200); each takes a
// contiguous range of polynomials in limb-major order (the batch entries of one limb in a row):
//   * the twiddles live in shared memory and are renewed only when the prime changes: the column
//     phase's 255 (universal) pairs, double-buffered by item parity, by cp.async while the items
//     before compute; the row phase's 255 pairs per owned row computed in place (compute_tw_row)
//     from 128 table pairs and 8 words per row, staged one item ahead;
//   * the next polynomial's slices are prefetched with cp.async into the other of two input tiles.
//
// Shared-memory layouts (32-bit words; bank-conflict-free for every access):
//   column tile [256][16]: rows r and r ^ 1 swapped where r & 16, i.e. (r, c) at
//     16 (r ^ ((r >> 4) & 1)) + c. A warp reads two rows whose words cover all banks; the
//     inverse's remote writes (two rows of 16 columns per warp) too.
//   row tile [16][256] (the inverse's first phase): (rho, c) at 256 rho + (c ^ 16 (rho & 1) ^
//     4 ((c >> 5) & 3)): the second round's 16-byte loads of 16 consecutive columns spread a
//     quarter warp over all 32 banks, the first round's 16-column strides over both halves.
//   the forward's second-phase tile: 16 blocks of 1 KB, one per sender (Cluster::bulk_tile).
//   row twiddles: per owned row, 256 pairs (w, w') at "heap" index k = 2^t + m for the pair of
//     local stage t (0..7) and group m, except that for t >= 5 the pair of thread s
//     (m = 2^(t-4) s + 2 i + b) sits at 2^t + 32 i + 2 s + b, so a quarter warp's 16-byte loads
//     are consecutive.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda_device.cuh"
#include "ntt_device.cuh"

namespace jax_fhe {
namespace ntt_cuda {

namespace {

constexpr int kLogN = 16;
constexpr int kN = 1 << kLogN;
constexpr int kSide = 256;              // rows = columns
constexpr int kTwRowWords = 2 * kSide;  // 256 (w, w') pairs per owned row
// Limbs one cluster may touch (their rows and primes are looked up in shared memory: a lookup
// from global memory, rows[] then moduli[], stalled every item on two dependent loads). Launches
// that would exceed it use the two-phase kernels (run_split).
constexpr int kMaxLimbSpan = 64;

// The slices of a polynomial and their tiles.
struct Cluster {
  static constexpr int kSlices = 16;
  static constexpr int kCtas = 8;                    // CTAs in the hardware cluster (two halves each)
  static constexpr int kSlice = kSide / kSlices;     // columns or rows a slice holds
  static constexpr int kSliceWords = kN / kSlices;
  static constexpr int kThreads = kSliceWords / 16;  // of a half: 16 elements per thread
  static constexpr uint32_t kMidBytes = sizeof(uint32_t) * kSliceWords;  // one slice's tile: 16 KB
  static constexpr uint32_t kBlockBytes = kMidBytes / kSlices;  // one sender's share of a tile: 1 KB
  static __device__ __forceinline__ int col_tile(int r, int c) { return 16 * (r ^ ((r >> 4) & 1)) + c; }
  static __device__ __forceinline__ int row_tile(int rho, int c) {
    return 256 * rho + (c ^ ((rho & 1) << 4) ^ (((c >> 5) & 3) << 2));
  }
  // The forward's second-phase tile: 16 blocks of 1 KB, block k = columns [16 k, 16 k + 16) (what
  // slice k sends), 16-byte chunk 4 rho + v of a block permuted by XOR with blk_perm(k) and rows
  // swapped by the owner's parity `own`:
  //   word (rho, c) at 256 k + 4 ((4 (rho ^ own) + v) ^ blk_perm(k)) + e,  c = 16 k + 4 v + e.
  // Conflict-free for round C (a warp reads one block: two rows x 16 columns), round D (8 lanes
  // read chunk v of one row in 8 blocks: blk_perm is a permutation of 0..7), the output staging
  // (8 lanes read chunks 0..3 of blocks 2a, 2a + 1: blk_perm differs in bit 2 between them) and
  // the sender's writes (two owners of opposite parity per warp).
  static __device__ __forceinline__ int blk_perm(int k) { return ((k & 1) << 2) | ((k >> 1) & 3); }
  static __device__ __forceinline__ int bulk_tile(int own, int rho, int c) {
    const int k = c >> 4, v = (c >> 2) & 3, e = c & 3;
    return 256 * k + 4 * ((4 * (rho ^ own) + v) ^ blk_perm(k)) + e;
  }
};

// pair slot of row-phase local stage t (0..7), group m, for thread s of the second round
__device__ __forceinline__ int tw_row_slot(int t, int m) {
  if (t <= 4) return (1 << t) + m;
  const int s = m >> (t - 4), low = m & ((1 << (t - 4)) - 1);
  return (1 << t) + 32 * (low >> 1) + 2 * s + (low & 1);
}
// its inverse: the local stage t and group m of pair slot p (0 < p < 256)
__device__ __forceinline__ void tw_row_stage_group(int p, int& t, int& m) {
  t = 31 - __clz(p);
  m = p - (1 << t);
  if (t > 4) {
    const int i = m >> 5, s = (m & 31) >> 1, b = m & 1;
    m = (s << (t - 4)) + 2 * i + b;
  }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// A whole-cluster barrier (release / acquire). SASS: MEMBAR.ALL.GPU before the arrive (it waits
// for the thread's global stores) and an L1 invalidation after the wait, so the kernel uses it
// only at its start and end; per item, the mbarriers below carry the ordering.
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// shared::cluster address of `local` (this CTA's shared memory) in CTA `rank`
__device__ __forceinline__ uint32_t map_rank(const void* local, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_addr(local)), "r"(rank));
  return r;
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// makes the initialisations visible to the other CTAs' complete-tx (before a cluster barrier)
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// this CTA's arrival for the barrier's current phase, which then also waits for `bytes` of
// st.async data (which may already have come: the transaction count goes negative meanwhile)
__device__ __forceinline__ void mbar_expect(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.relaxed.cta.shared::cta.b64 _, [%0], %1;"
               ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
// wait for the phase of parity `parity` to complete. The phase completes only once the st.async
// or bulk-copy bytes it counts have been written to this CTA's shared memory, which no cache stands in front
// of, so the default CTA-scope acquire is enough; a cluster-scope acquire compiled to an L1
// invalidation (CCTL.IVALL, for global data) per item: 4% of the stall samples. The loop runs
// about 30 times per item (3 instructions each); a suspend-time hint (NANOSLEEP.SYNCS between
// tries) changed nothing measurable.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra WAIT_%=;\n\t}"
      ::"r"(smem_addr(bar)), "r"(parity) : "memory");
}
// Whether the phase of `parity` of the local mbarrier has completed (no wait).
__device__ __forceinline__ bool mbar_test(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
// One arrival on the mbarrier at `addr` (shared::cluster, from map_rank). Relaxed: it reports
// that TMA copies out of the arriving CTA's memory have landed, which orders nothing the arriver
// wrote; the release form (MEMBAR.ALL.GPU, behind the thread's global stores) cost about 20 us at
// L = 48, batch 16.
__device__ __forceinline__ void mbar_arrive_remote(uint32_t addr) {
  asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];" ::"r"(addr) : "memory");
}
// orders this thread's generic-proxy writes to shared memory before later async-proxy (TMA)
// reads of it
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// `bytes` (a multiple of 16) from this CTA's shared memory to shared memory of the cluster
// (`dst` from map_rank) by the TMA engine, counted on that CTA's mbarrier `bar`
__device__ __forceinline__ void bulk_copy_remote(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(dst), "r"(smem_addr(src)), "r"(bytes), "r"(bar) : "memory");
}

// 4 bytes into CTA-shared memory of the cluster (`addr` from map_rank), counted on that CTA's
// mbarrier `bar` (likewise mapped); asynchronous, no fence
__device__ __forceinline__ void store_async(uint32_t addr, uint32_t v, uint32_t bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];"
               ::"r"(addr), "r"(v), "r"(bar) : "memory");
}
#endif

// 16 elements x[j] of one radix-16 round: local stage t (0..3) pairs x[j] and x[j + (8 >> t)]
// with twiddle pair (t, m = j >> (4 - t)), which `slot(t, m)` places in `tw` (pairs m, m + 1
// adjacent for even m and t >= 1, so they load as one 16-byte vector). The inverse runs the
// stages in reverse with Gentleman-Sande butterflies; SCALED folds N^-1 into its last stage
// (sc = {N^-1, Shoup, tw N^-1, Shoup}), leaving canonical values. FIRST (forward): the round
// holds the transform's stage 0, whose inputs are canonical (below q; anything below 2q gives the
// same result), so its butterflies skip the conditional subtraction of a, which would leave them
// unchanged (8 instructions per thread and item; H100, L = 48, batch 16: 1.5-2 us).
template <bool INVERSE, bool SCALED = false, bool FIRST = false, typename Slot>
__device__ __forceinline__ void radix16(uint32_t (&x)[16], uint32_t q, const uint32_t* tw, Slot slot,
                                        const uint32_t* sc = nullptr) {
  uint32_t w[15], ws[15];
  {
    const uint2 p = *reinterpret_cast<const uint2*>(tw + 2 * slot(0, 0));
    w[0] = p.x, ws[0] = p.y;
  }
  // fixed trip counts (with breaks) so that the loops unroll completely and x[] stays in registers
#pragma unroll
  for (int t = 1; t < 4; ++t) {
#pragma unroll
    for (int m = 0; m < 8; m += 2) {
      if (m >= (1 << t)) break;
      const uint4 p = *reinterpret_cast<const uint4*>(tw + 2 * slot(t, m));
      const int i = (1 << t) - 1 + m;
      w[i] = p.x, ws[i] = p.y, w[i + 1] = p.z, ws[i + 1] = p.w;
    }
  }
  const uint32_t two_q = register_two_q(q);
#pragma unroll
  for (int ts = 0; ts < 4; ++ts) {
    const int t = INVERSE ? 3 - ts : ts;
    const int h = 8 >> t;
#pragma unroll
    for (int m = 0; m < 8; ++m) {
      if (m >= (1 << t)) break;
      const int i = (1 << t) - 1 + m;
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        if (jj >= h) break;
        uint32_t& a = x[m * 2 * h + jj];
        uint32_t& b = x[m * 2 * h + jj + h];
        if (!INVERSE && FIRST && t == 0) {  // stage 0: a < 2q
          ct_butterfly_lazy<true>(a, b, w[i], ws[i], q, two_q);
        } else if (!INVERSE) {
          ct_butterfly_lazy(a, b, w[i], ws[i], q, two_q);
        } else if (SCALED && t == 0) {  // (a + b) N^-1, (a - b) tw N^-1, both canonical
          const uint32_t a0 = a;
          a = mul_shoup(a0 + b, sc[0], sc[1], q);
          b = mul_shoup(a0 - b + two_q, sc[2], sc[3], q);
        } else {
          gs_butterfly_lazy(a, b, w[i], ws[i], q, two_q);
        }
      }
    }
  }
}

// The launch's items in limb-major order (item = limb * batch + entry), walked one by one so
// that the loop divides nothing (a 64-bit division is a software routine on the GPU). `lim` counts
// limbs from the cluster's first, indexing its limb table in shared memory.
struct WorkItem {
  int64_t poly;
  int row;
  uint32_t q;
};
struct ItemCursor {
  int64_t entry;
  int lim;
  __device__ __forceinline__ WorkItem item(int limb0, int limbs, const int* limb_row,
                                           const uint32_t* limb_q) const {
    return {entry * limbs + limb0 + lim, limb_row[lim], limb_q[lim]};
  }
  __device__ __forceinline__ void advance(int64_t batch) {
    if (++entry == batch) entry = 0, ++lim;
  }
};

// Twiddle tables are copied with cp.async (no register holds them, so a reload stalls nobody
// until its first use).

// Pairs 0..count-1 of a table row (w, then its Shoup companion) into dst, interleaved.
__device__ __forceinline__ void issue_table_pairs(uint32_t* dst, const uint32_t* tw, const uint32_t* tws, int count,
                                                  int tid) {
  for (int k = tid; k < count; k += Cluster::kThreads) {
    copy_async<4>(dst + 2 * k, tw + k);
    copy_async<4>(dst + 2 * k + 1, tws + k);
  }
}

// The row bases of compute_tw_row for table row `row`: word 8 rho + t is the stage-(8 + t)
// group-0 twiddle of row S rank + rho.
__device__ __forceinline__ void issue_row_bases(uint32_t* dst, const uint32_t* tw, int rank, int tid) {
  constexpr int S = Cluster::kSlice;
  static_assert(Cluster::kThreads >= 8 * S, "one row base per thread");
  if (tid < 8 * S) {
    const int r = S * rank + (tid >> 3), st = tid & 7;
    copy_async<4>(dst + tid, tw + (1 << (8 + st)) + (r << st));
  }
}

// The column-phase twiddles (stages 0..7 use pairs 1..255) of table row `row`; for the inverse
// also N^-1 and its Shoup companion into scale[0..1] (finish_scale derives scale[2..3]).
template <bool INVERSE>
__device__ __forceinline__ void issue_tw_col(uint32_t* dst, uint32_t* scale, const Tables& t, int row, int tid) {
  const uint32_t* tw = t.tw + static_cast<int64_t>(row) * kN;
  const uint32_t* tws = t.tw_shoup + static_cast<int64_t>(row) * kN;
  issue_table_pairs(dst, tw, tws, kSide, tid);
  if (INVERSE && tid == 0) {
    copy_async<4>(scale, t.scale + row);
    copy_async<4>(scale + 1, t.scale_shoup + row);
  }
}
// The inverse's issue_tw_col, not inlined (H100, L = 48, batch 16, halves form: inverse
// 227.6-228.3 against 231.5-232.5 us inlined; the same for the forward was slower).
__device__ __noinline__ void issue_tw_col_inverse(uint32_t* dst, uint32_t* scale, const Tables& t, int row,
                                                  int tid) {
  issue_tw_col<true>(dst, scale, t, row, tid);
}

// The inverse's last-stage constants once issue_tw_col's copies have landed (one thread):
// tw[1] N^-1 and its Shoup companion.
__device__ __forceinline__ void finish_scale(uint32_t* scale, const uint32_t* tw_col, uint32_t q) {
  const uint32_t w1 = mul_shoup(tw_col[2], scale[0], scale[1], q);
  scale[2] = w1, scale[3] = shoup_companion(w1, q);
}

// The row-phase twiddles of a slice's 16 rows, computed into dst (tw_row's layout) instead of
// copied: with psi the table's root, the pair of stage 8 + t, group (r << t) + m is
//   psi^brev16(2^(8+t) + (r << t) + m) = psi^brev16(2^(8+t) + (r << t)) * psi^brev16(m),
// the row's group-0 twiddle of that stage (bases: 8 words per row, issue_row_bases) times entry
// m < 128 of the same table, which `pairs` holds with its Shoup companion (staged by
// split_stage_row_factors). Copying the tables moved 32 KB per slice per limb, mostly from HBM
// (H100, L = 48, batch 16: copied row tables were 3-6 us slower in the split forward). The
// companions: Companions (ntt_device.cuh). Called, not inlined: inlined, its cold code moved the
// hot loop's schedule and gained nothing.
__device__ __noinline__ void compute_tw_row(uint32_t* dst, const uint32_t* pairs, const uint32_t* bases,
                                            uint32_t q, int tid) {
  using G = Cluster;
  constexpr int kRowStep = G::kThreads / kSide;  // rows between a thread's pairs (1)
  const int p = tid % kSide, rho0 = tid / kSide;
  if (p == 0) return;  // (pair slot 0 is unused)
  int st, m;
  tw_row_stage_group(p, st, m);
  const uint2 a = *reinterpret_cast<const uint2*>(pairs + 2 * m);  // psi^brev16(m), companion
  const Companions companion(q);
#pragma unroll
  for (int k = 0; k < G::kSlice / kRowStep; ++k) {
    const int rho = rho0 + k * kRowStep;
    const uint32_t w = mul_shoup(bases[8 * rho + st], a.x, a.y, q);
    *reinterpret_cast<uint2*>(dst + rho * kTwRowWords + 2 * p) = make_uint2(w, companion(w));
  }
}

// The kernel's shared memory, per CTA (198 KB). (Below "first half" and "second half" are the
// CTA's halves by phase: forward, columns then rows; inverse, rows then columns.)
struct SplitSmem {
  static constexpr int kSliceWords = Cluster::kSliceWords;
  uint64_t full[2];   // second half: mid[b] holds its item (both slices: 32 KB)
  uint64_t sent[2];   // forward's first half: every second half has received in[b]'s blocks (8 arrivals)
  uint64_t freed[2];  // first half: every second half is done reading mid[b] (8 arrivals)
  uint64_t pad[2];    // (in[] 16-byte aligned)
  uint32_t in[2][2][kSliceWords];   // first half: [buffer][slice]
  uint32_t mid[2][2][kSliceWords];  // second half: [buffer][slice]
  uint32_t tw_row[2 * 16 * kTwRowWords];  // the row half's: 32 rows
  uint32_t tw_col[2][kTwRowWords];        // the column half's, by item parity
  uint32_t scale[2][4];       // inverse: N^-1 and tw[1] N^-1 with Shoup companions, by parity
  uint32_t row_fac[256 + 2 * 8 * 16];  // compute_tw_row's pairs, then 32 rows' bases
  int limb_row[kMaxLimbSpan];
  uint32_t limb_q[kMaxLimbSpan];
};
static_assert(offsetof(SplitSmem, in) % 16 == 0 && offsetof(SplitSmem, mid) % 16 == 0 &&
                  offsetof(SplitSmem, tw_row) % 16 == 0, "16-byte aligned bulk-copy buffers");

}  // namespace

}  // namespace ntt_cuda
}  // namespace jax_fhe
