// Single-pass negacyclic NTT / INTT for N = 2^16 on sm_90 and newer, bit-identical to
// ntt_cpu.cc: each coefficient crosses HBM once each way (the two-phase kernels of ntt_cuda.cu
// move it twice). Primes below 2^30 only (Harvey's lazy butterflies).
//
// Geometry. N = 256 x 256, row-major (index i = 256 r + c). The forward transform's stages 0..7
// pair elements of one column, stages 8..15 elements of one row (ntt_cuda.cu's header). A
// thread-block cluster holds one polynomial at a time in C slices (8 or 16), each run by a CTA or,
// with H = 2, by one half of a CTA (Cluster<C, H>; "CTA" below means the slice's threads), each
// slice S = 256 / C columns or rows:
//   column phase: CTA k owns columns [S k, S k + S) (a 256 x S tile);
//   row phase:    CTA m owns rows    [S m, S m + S) (an S x 256 tile).
// The column phase's results go straight into the owners' row tiles through distributed shared
// memory, counted on the owner's mbarrier: in the 16-slice forms as one 1 KB block per (sender,
// owner) copied by the TMA engine (cp.async.bulk), otherwise by st.async per element. The inverse
// runs the mirror image (rows first, then columns, then the N^-1 scaling), with st.async.
//
// Inside a phase each of the 4096 / C threads holds 16 elements and runs 4 stages in registers
// (radix-16 rounds); the two rounds of a phase exchange through the CTA's own tile.
//
// Persistence. The grid is as many clusters as fit; each takes a contiguous range of
// polynomials in limb-major order (the batch entries of one limb in a row), so:
//   * the twiddles live in shared memory and are renewed only when the prime changes: the
//     column phase's 255 (universal) pairs, double-buffered, by cp.async while the polynomials
//     before compute; the row phase's 255 pairs per owned row copied likewise (forward) or
//     computed in place from 8 words per row and 128 table pairs (inverse, compute_tw_row: 16
//     times fewer bytes). Twiddles are the loads that made the first cluster kernel (one
//     polynomial per thread, every twiddle from L2) slower than the two-phase kernels;
//   * the next polynomial's slice is prefetched with cp.async while the current one computes,
//     into the other of two input tiles;
//   * the next polynomial's first round runs while the current one's slices arrive; the second
//     phase's tiles are double-buffered (see the loop for why no barrier is needed between).
// C = 8: one 512-thread CTA per SM (200 KB of shared memory); C = 16 (a non-portable cluster
// size): two 256-thread CTAs of 100 KB per SM, whose barriers and phases do not line up; C = 16,
// H = 2 (the default): clusters of 8 CTAs of two such halves (named barriers), as independent
// as two CTAs per SM but 15 clusters to an H100 against 14 of 16 CTAs.
//
// Status: since session 30 the default is the split form (ntt_split_kernel, below: each CTA's
// halves run different phases; H100, L = 48, batch 16 since session 31: forward 208.1-208.2 us,
// inverse 208.7-209.1, 63.4-63.7% of copy). What follows is the history of the halves form
// (benchmarks/RESULTS.md, sessions 17-29), the default for launches of >= 128 polynomials until
// then, with a tail on the SMs its clusters leave idle (the launch's last polynomials, run by
// the streamed kernel: tail_polys). H100, L = 48, device time,
// forward / inverse: batch 16 230.8-233.4 / 223.1-225.7 us (56.8-57.1 / 58.7-59.0% of the copy's
// device-time bandwidth, session 29; 59.4-60.6 / 61.4-62% of its wall-time one, two H100s),
// batch 64 854.5-858.7 / 830.3-840.1 (session 28: the forward's row tables as bulk copies,
// against 237.6-238.1 and 865.8-874.3 forward before). Session 26 (the prologue waits for
// less): 238.7-240.6 / 224.7-225.2 against 239.5-240.5 / 231.3 for session 25's build; then the
// forward's clusters and its tail ended within about 2 us of each other. Session 25 (the inverse
// computes its row tables): 239.5-239.7 /
// 230.7-231.3; session 22 without the tail 251.6-252.9 / 249.4-250.4; batch 128 1726.4 /
// 1705.5 (62.9 / 63.7%, session 22); a fixed cost per launch of about 27 us (a
// 13 us prologue, twiddle reloads, drain); against 335-339 / 340-342 for the two-phase
// kernels at batch 16; faster from batch 4 (192 polynomials) on, slower at batch 1. About
// 1330-1400 instructions per warp and item (768 of them butterflies; 570-624 on the FMA pipe,
// whose throttle and ready-but-not-chosen warps fill about half of each round's stall samples,
// session 23) at about 2 per cycle, and per-section clock counts (session 20) show the phases
// run one after another: without its butterflies the forward still took 182 us, and 16
// st.async per thread (32 KB out of each SM per item at about 20 bytes per cycle) made round B
// twice as long as round A. Measured and not kept (sessions 18-23):
// a cluster barrier per item (its release is MEMBAR.ALL.GPU, its acquire an L1 invalidation), rows
// dealt round-robin to the owners, the column phase's row groups numbered from the CTA's rank,
// the barrier after the st.async burst moved past the next first round, 16-byte st.async staged
// through the CTA's own tile (the extra barrier cost more than the MIO queue saved), a
// suspend-time hint on the mbarrier wait (no change), the forward's input and output
// addresses as compile-time strides (6-8 us slower, unlike the inverse's input), 32 slices on
// clusters of 8 CTAs of four parts (281 / 257 us), the forward's output stored from the registers
// (312 us), the butterfly's adds forced onto the ALU pipe (slower both ways), the forward's blocks
// staged in the finished mid tile instead of in place (260 us: no acknowledgements needed, but
// slower), the inverse's blocks sent by TMA (a part barrier per item more; 267 us), the second
// half of each CTA starting its loop 1-2 us late (no change), the forward's first row table waited
// for at the loop's first P1 instead of in the prologue (no measurable change; the prologue's
// 9-10 us load wait is mostly not the row table), the prologue's loads in two groups, item 0's
// first phase waiting only for its own (3 / 6 us slower, session 22), an L2 prefetch of each
// part's share of the next limb's tables two items ahead (4-8 us slower), the row tables copied
// by the TMA engine in the global tables' order (w and w' apart, 10 loads per radix16 instead
// of 8: forward 288 us with spills, inverse 243-245 against 237; session 22, wip/tma-tables),
// and the bulk forward's slice waited for on an mbarrier fed by cp.async.mbarrier.arrive instead
// of a part barrier (its check and benchmark did not finish in 120-150 s: a hang, not
// diagnosed), and the row-table reload as a gather in the tables' global order (each warp's
// copies 128 consecutive bytes: 6-9 us slower), an L2 prefetch of the later limbs' tables in
// the prologue (2-6 us slower), evict-first hints on the slices and outputs (no change), two
// twiddle products in round D's last stage, as on-the-fly twiddles would need (a probe: 14 / 9
// us slower), the inverse's round-D reload by one slot per thread (5 us slower unrolled, 9
// rolled) and the start's cluster barrier split around the prologue's loads (the inverse 5 us
// slower; session 23), the clusters' limb changes staggered by a rotated walk (no effect on
// or off; its state cost the inverse 12 us), the inverse sending item i + 1 before item i's
// second phase with a "freed" mbarrier per mid buffer (8-13 us slower in three orders: the
// time follows the instructions issued, not the exchange's slack), one warp per part polling
// full[] while the others wait at a part barrier (3 / 14 us slower) and the forward's item 0
// waiting only for its own loads (2 us slower, all of it the loop's new schedule: a control
// with the same loop SASS waiting for every load was as slow; session 24). The row tables'
// reloads themselves cost 7 (forward) and 10 us (inverse) at L = 48, batch 16, and the
// forward's first one about 5 us more (timing builds without them, session 22). Session 25
// computes the inverse's (compute_tw_row): 5-6 us faster at batch 16, 10-15 at batch 64. The
// forward computing its own was 2-3 us faster at batch 16 but 16-20 us slower at batch 64 (its
// loop's schedule moved; so did a build with the copies and only the inverse's shared-memory
// field added, hence the separate layouts); inlined, the computation gained nothing in either
// direction, and the forward's placed at P1 or after round 2 no more than at P4. Session 27: the
// kernel launched as programmatic-dependent on the one before (its CTAs found no SMs free early;
// L2 prefetches before the wait 3-4 us slower); one build with both the copied and the computed
// forward row tables, chosen at run time, showed computing them worth about 1 us at batch 16
// (as much as issuing item 1's slice after item 0's first round), while builds with only the
// computed path lost 14-35 us at batch 64 to the loop's schedule. Session 28 (the row tables as
// bulk copies): builds with only the bulk path, the mbarrier waited for by every thread, by
// thread 0 then a part barrier, or after the cp.async wait, lost 17-29 us at batch 64 to their
// loops' schedules (the kept build has both paths); an L2 prefetch of the next limb's slab two
// items ahead was 5 us slower at batch 16; the bulk copy without its fence.proxy.async no faster.
// Session 29 (RESULTS.md): the start's cluster barrier split around the prologue (forward only:
// as fast; in the inverse a race, that barrier also publishes compute_tw_row's table), the end's
// relaxed, the first row table issued later or computed (1.4 us structurally, but each build's
// loop drew a slower schedule), the prefetch's addresses as compile-time strides (32 fewer loop
// instructions, 5 us slower), and the output's stores deferred past the next round 2 (9 us
// slower); round 2's fence.proxy.async is needed (without it the check fails) and costs nothing.
//
// Shared-memory layouts (32-bit words; bank-conflict-free for every access below):
//   column tile [256][S]: S = 32: (r, c) at 32 r + (c ^ 16 (r & 1)); S = 16: rows r and r ^ 1
//     swapped where r & 16, i.e. (r, c) at 16 (r ^ ((r >> 4) & 1)) + c. A warp reads one row
//     (S = 32) or two rows (S = 16) whose words cover all banks; the inverse's remote writes
//     (two rows of 16 columns per warp) too.
//   row tile [S][256]: (rho, c) at 256 rho + (c ^ 16 (rho & 1) ^ 4 ((c >> 5) & 3)): the second
//     round's 16-byte loads of 16 consecutive columns spread a quarter warp over all 32 banks,
//     the first round's 16-column strides over both halves.
//     The bulk forward's (S = 16) is 16 blocks of 1 KB, one per sender (Cluster::bulk_tile).
//   row twiddles: per owned row, 256 pairs (w, w') at "heap" index k = 2^t + m for the pair of
//     local stage t (0..7) and group m, except that for t >= 5 the pair of thread s
//     (m = 2^(t-4) s + 2 i + b) sits at 2^t + 32 i + 2 s + b, so a quarter warp's 16-byte loads
//     are consecutive.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

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
// that would exceed it use the two-phase kernels (run_cluster).
constexpr int kMaxLimbSpan = 64;

// C slices per polynomial, run by C / H CTAs of H independent parts each: H = 2 splits a CTA
// into two halves that synchronise separately (named barriers), as two CTAs per SM would, while
// the cluster stays at 8 CTAs (15 clusters fit an H100 against 14 of 16 CTAs). Below, "CTA" means
// such a part wherever H = 2.
template <int C, int H = 1>
struct Cluster {
  static_assert((C == 8 && H == 1) || (C == 16 && (H == 1 || H == 2)), "clusters of 8 or 16 parts");
  static constexpr int kCtas = C / H;          // CTAs in the hardware cluster
  static constexpr int kSlice = kSide / C;     // columns or rows a part owns
  static constexpr int kSliceWords = kN / C;
  static constexpr int kThreads = kSliceWords / 16;  // of a part: 16 elements per thread
  static constexpr int kBlockThreads = H * kThreads;
  static constexpr int kMinBlocks = C == 8 || H == 2 ? 1 : 2;  // CTAs per SM
  static constexpr uint32_t kMidBytes = sizeof(uint32_t) * kSliceWords;  // an item's transactions
  // The forward of the 16-slice forms sends its first phase's results as one 1 KB block per
  // owner by the TMA engine (cp.async.bulk), not 16 st.async per thread (see round2).
  static constexpr bool kBulkForward = C == 16;
  static constexpr uint32_t kBlockBytes = kMidBytes / C;  // one sender's share of a tile: 1 KB
  struct SmemForward {
    uint64_t full[2];                       // mid[b] has received its item (mbarriers)
    uint64_t sent[2];                       // bulk forward: every owner has received in[b]'s blocks
    uint32_t in[2][kSliceWords];            // first phase's tiles, prefetched
    uint32_t mid[2][kSliceWords];           // second phase's tiles, written by the cluster
    uint32_t tw_row[kSlice * kTwRowWords];  // row-phase twiddles of the owned rows
    uint32_t tw_col[2][kTwRowWords];        // column-phase twiddles, by item parity
    union {  // (one of them per direction: the layout, and the inverse's code, as without row_bar)
      uint32_t scale[2][4];                 // inverse: N^-1 and tw[1] N^-1 with Shoup companions
      uint64_t row_bar;                     // forward: tw_row's bulk copy has landed (mbarrier)
    };
    int limb_row[kMaxLimbSpan];             // table row and prime of the cluster's limbs
    uint32_t limb_q[kMaxLimbSpan];
  };
  struct SmemInverse : SmemForward {
    // compute_tw_row's factors: 128 pairs (psi^brev16(m) and companion), then the owned rows'
    // 8 stage bases each
    uint32_t row_fac[256 + 8 * kSlice];
  };
  // (the forward's layout without the inverse's row_fac: with it, the forward's loop compiled
  // differently and took 243.1-243.8 against 239.8-240.1 us at L = 48, batch 16; session 25)
  template <bool INVERSE>
  using Smem = std::conditional_t<INVERSE, SmemInverse, SmemForward>;
  // the bulk copies (TMA) need 16-byte aligned shared-memory addresses, in each of H parts
  static_assert(sizeof(SmemForward) % 16 == 0 && sizeof(SmemInverse) % 16 == 0 &&
                    offsetof(SmemForward, in) % 16 == 0 && offsetof(SmemForward, mid) % 16 == 0 &&
                    offsetof(SmemForward, tw_row) % 16 == 0,
                "16-byte aligned bulk-copy buffers");
  static __device__ __forceinline__ int col_tile(int r, int c) {
    if constexpr (C == 8) return 32 * r + (c ^ ((r & 1) << 4));
    else return 16 * (r ^ ((r >> 4) & 1)) + c;
  }
  static __device__ __forceinline__ int row_tile(int rho, int c) {
    return 256 * rho + (c ^ ((rho & 1) << 4) ^ (((c >> 5) & 3) << 2));
  }
  // Bulk forward's row tile: 16 blocks of 1 KB, block k = columns [16 k, 16 k + 16) (what part k
  // sends), 16-byte chunk 4 rho + v of a block permuted by XOR with blk_perm(k) and rows swapped
  // by the owner's parity `own`:
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

// `bytes` (a multiple of 16) from global memory into this CTA's shared memory by the TMA engine,
// counted on this CTA's mbarrier `bar`
__device__ __forceinline__ void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
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
// unchanged (8 instructions per thread and item: H100, L = 48, batch 16, 237.3-238.9 against
// 239.3-240.4 us; the same in the inverse's first stage measured 236.6-237.4 against
// 235.7-236.7, not kept; session 23).
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
// until its first use), one commit group per call site in the loop; the forward's row table,
// where the tables carry it in its shared-memory order, as one bulk copy.

// The forward's row-phase twiddles: rows [S rank, S rank + S) of table row `row` (tw_row_slot's
// order), 2S KB per part, loaded whenever an item's limb uses another row than the last's.
// With the context's psi_rows (Tables::tw_rows: the host lays each table row out in tw_row's
// order, so a part's rows are contiguous) one thread issues them as one bulk copy counted on
// row_bar (issue_tw_row), once every reader of the old table is past a barrier; without them
// (Tables::tw_rows null: see row_tables in ntt_cuda.cu) every thread copies its slot of every
// (kThreads / 256)-th row from psi with cp.async (gather_tw_row: 32 four-byte copies per
// thread), in the loop's P4 commit group. At L = 48, batch 16 the copies took 3.6-3.9 us of the iteration that issued them, twice
// per launch (session 27 timeline); the bulk copy saved 5-6 us of the launch on the same build
// (session 28). (The forward computing its table as the inverse does, compute_tw_row, made the
// hot loop slower per item; session 25.)
// (gather_tw_row: thread tid copies slot tid % 256 of every (kThreads / 256)-th row, so that the
// slot's stage and group are worked out once and its rows follow at a constant stride.)
template <int C>
__device__ __forceinline__ void gather_tw_row(uint32_t* dst, const Tables& t, int row, int rank, int tid) {
  using G = Cluster<C>;
  const uint32_t* tw = t.tw + static_cast<int64_t>(row) * kN;
  const uint32_t* tws = t.tw_shoup + static_cast<int64_t>(row) * kN;
  static_assert(G::kThreads % kSide == 0, "one slot per thread");
  constexpr int kRowStep = G::kThreads / kSide;  // rows between a thread's copies
  const int p = tid % kSide, rho0 = tid / kSide;
  if (p < 1) return;  // (pair slot 0 is unused; this compare, not p == 0, is the measured SASS)
  int st, m;
  tw_row_stage_group(p, st, m);
  const int r0 = G::kSlice * rank + rho0;
  const int64_t g0 = (1 << (8 + st)) + (r0 << st) + m;  // stage 8 + st, group (r0 << st) + m
  const int64_t step = static_cast<int64_t>(kRowStep) << st;  // to row r0 + kRowStep (k + 1)
  uint32_t* d = dst + rho0 * kTwRowWords + 2 * p;
#pragma unroll
  for (int k = 0; k < G::kSlice / kRowStep; ++k) {
    copy_async<4>(d + k * kRowStep * kTwRowWords, tw + g0 + k * step);
    copy_async<4>(d + k * kRowStep * kTwRowWords + 1, tws + g0 + k * step);
  }
}

// (issue_tw_row: the bulk copy, from one thread; a part's rows do not depend on H)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
template <int C>
__device__ __forceinline__ void issue_tw_row(uint32_t* dst, const Tables& t, int row, int rank, uint64_t* bar) {
  using G = Cluster<C>;
  constexpr uint32_t kBytes = sizeof(uint32_t) * G::kSlice * kTwRowWords;
  fence_proxy_async_smem();  // the generic-proxy reads of the old table before the async write
  mbar_expect(bar, kBytes);
  bulk_load(dst, t.tw_rows + (static_cast<int64_t>(row) << (kLogN + 1)) + rank * (kBytes / 4), kBytes, bar);
}
#endif

// Pairs 0..count-1 of a table row (w, then its Shoup companion) into dst, interleaved.
template <int C>
__device__ __forceinline__ void issue_table_pairs(uint32_t* dst, const uint32_t* tw, const uint32_t* tws, int count,
                                                  int tid) {
  for (int k = tid; k < count; k += Cluster<C>::kThreads) {
    copy_async<4>(dst + 2 * k, tw + k);
    copy_async<4>(dst + 2 * k + 1, tws + k);
  }
}

// The row bases of compute_tw_row for table row `row`: word 8 rho + t is the stage-(8 + t)
// group-0 twiddle of row S rank + rho.
template <int C>
__device__ __forceinline__ void issue_row_bases(uint32_t* dst, const uint32_t* tw, int rank, int tid) {
  constexpr int S = Cluster<C>::kSlice;
  static_assert(Cluster<C>::kThreads >= 8 * S, "one row base per thread");
  if (tid < 8 * S) {
    const int r = S * rank + (tid >> 3), st = tid & 7;
    copy_async<4>(dst + tid, tw + (1 << (8 + st)) + (r << st));
  }
}

// The column-phase twiddles (stages 0..7 use pairs 1..255) of table row `row`; for the inverse
// also N^-1 and its Shoup companion into scale[0..1] (finish_scale derives scale[2..3]).
template <int C, bool INVERSE>
__device__ __forceinline__ void issue_tw_col(uint32_t* dst, uint32_t* scale, const Tables& t, int row, int tid) {
  const uint32_t* tw = t.tw + static_cast<int64_t>(row) * kN;
  const uint32_t* tws = t.tw_shoup + static_cast<int64_t>(row) * kN;
  issue_table_pairs<C>(dst, tw, tws, kSide, tid);
  if (INVERSE && tid == 0) {
    copy_async<4>(scale, t.scale + row);
    copy_async<4>(scale + 1, t.scale_shoup + row);
  }
}
// The inverse's factors of compute_tw_row for table row `row` into fac: pairs 0..127 of the
// table (as issue_tw_col places them), then the row bases. Not inlined, like the other code that
// runs at limb changes only (compute_tw_row, issue_tw_col_inverse).
template <int C>
__device__ __noinline__ void issue_row_factors(uint32_t* fac, const Tables& t, int row, int rank, int tid) {
  const uint32_t* tw = t.tw + static_cast<int64_t>(row) * kN;
  const uint32_t* tws = t.tw_shoup + static_cast<int64_t>(row) * kN;
  issue_table_pairs<C>(fac, tw, tws, 128, tid);
  issue_row_bases<C>(fac + 256, tw, rank, tid);
}

// The inverse's issue_tw_col, not inlined (H100, L = 48, batch 16: inverse 227.6-228.3 against
// 231.5-232.5 us inlined; the same for the forward took 239.8-240.4 against 235.8-236.5).
template <int C>
__device__ __noinline__ void issue_tw_col_inverse(uint32_t* dst, uint32_t* scale, const Tables& t, int row,
                                                  int tid) {
  issue_tw_col<C, true>(dst, scale, t, row, tid);
}

// The inverse's last-stage constants once issue_tw_col's copies have landed (one thread):
// tw[1] N^-1 and its Shoup companion.
__device__ __forceinline__ void finish_scale(uint32_t* scale, const uint32_t* tw_col, uint32_t q) {
  const uint32_t w1 = mul_shoup(tw_col[2], scale[0], scale[1], q);
  scale[2] = w1, scale[3] = shoup_companion(w1, q);
}

// The row-phase twiddles of the part's rows, computed into dst (tw_row's layout) instead of
// copied: with psi the table's root, the pair of stage 8 + t, group (r << t) + m is
//   psi^brev16(2^(8+t) + (r << t) + m) = psi^brev16(2^(8+t) + (r << t)) * psi^brev16(m),
// the row's group-0 twiddle of that stage (bases: 8 words per row, issue_row_bases) times entry
// m < 128 of the same table, which `pairs` holds with its Shoup companion (the inverse's staged
// copy, issue_row_factors). Copying the tables moved 32 KB per part per limb, mostly
// from HBM (about 12 us forward and 10 us inverse at L = 48, batch 16; session 22). The
// companion floor(w 2^32 / q) comes from v = floor(2^64 / q) (a double division, off by at
// most 1): floor(w v / 2^32) is within 1 of it for w < 2^30, and the remainder w 2^32 - ws q
// (mod 2^32; negative as int32, or at least q, when ws is 1 too large or too small, for
// q < 2^30) corrects it. Called, not inlined: inlined (in the forward, session 25), its cold
// code moved the hot loop's schedule and gained nothing.
template <int C>
__device__ __noinline__ void compute_tw_row(uint32_t* dst, const uint32_t* pairs, const uint32_t* bases,
                                            uint32_t q, int tid) {
  using G = Cluster<C>;
  constexpr int kRowStep = G::kThreads / kSide;  // rows between a thread's pairs
  const int p = tid % kSide, rho0 = tid / kSide;
  if (p == 0) return;  // (pair slot 0 is unused)
  int st, m;
  tw_row_stage_group(p, st, m);
  const uint2 a = *reinterpret_cast<const uint2*>(pairs + 2 * m);  // psi^brev16(m), companion
  const uint64_t v = static_cast<uint64_t>(18446744073709551616.0 / static_cast<double>(q));
  const uint32_t v_lo = static_cast<uint32_t>(v), v_hi = static_cast<uint32_t>(v >> 32);
#pragma unroll
  for (int k = 0; k < G::kSlice / kRowStep; ++k) {
    const int rho = rho0 + k * kRowStep;
    const uint32_t w = mul_shoup(bases[8 * rho + st], a.x, a.y, q);
    uint32_t ws = __umulhi(w, v_lo) + w * v_hi;  // floor(w 2^32 / q) - 1, + 0 or + 1
    const uint32_t r = 0u - ws * q;              // w 2^32 - ws q mod 2^32
    if (r >= q) ws += static_cast<int32_t>(r) < 0 ? -1 : 1;
    *reinterpret_cast<uint2*>(dst + rho * kTwRowWords + 2 * p) = make_uint2(w, ws);
  }
}

template <int C, int H, bool INVERSE>
__global__ void __launch_bounds__(Cluster<C, H>::kBlockThreads, Cluster<C, H>::kMinBlocks)
    ntt_cluster_kernel(const uint32_t* src, uint32_t* dst,  // may alias (in place)
                       Tables t, int64_t polys, int64_t batch) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using G = Cluster<C, H>;
  constexpr int S = G::kSlice;
  extern __shared__ __align__(16) uint32_t smem_words[];
  using Smem = typename G::template Smem<INVERSE>;
  Smem* const parts = reinterpret_cast<Smem*>(smem_words);
  const int part = H == 1 ? 0 : static_cast<int>(threadIdx.x) / G::kThreads;
  Smem& sm = parts[part];
  uint32_t* const row_fac = [&]() -> uint32_t* {  // (the inverse's only)
    if constexpr (INVERSE) return sm.row_fac;
    else return nullptr;
  }();
  const int tid = static_cast<int>(threadIdx.x) - part * G::kThreads;  // within the part
  const int col = tid % S, g = tid / S;   // column phase: owned column, row group (0..15)
  const int rho = tid >> 4, s = tid & 15;  // row phase: owned row, thread within the row
  const int rank = H * static_cast<int>(cluster_rank()) + part;  // the part's slice
  constexpr bool kBulk = !INVERSE && G::kBulkForward;
  // the second phase's tile: the bulk forward's block layout, or row_tile
  auto mid_tile = [own = rank & 1](int r, int c) {
    return kBulk ? G::bulk_tile(own, r, c) : G::row_tile(r, c);
  };
  const int64_t clusters = gridDim.x / G::kCtas, cid = blockIdx.x / G::kCtas;
  // the part's barrier: the whole CTA's, or a named one per half
  auto part_sync = [part]() {
    if constexpr (H == 1) __syncthreads();
    else asm volatile("bar.sync %0, %1;" ::"r"(1 + part), "n"(G::kThreads) : "memory");
  };
  // shared::cluster address of `mine` (in this part's Smem) in the Smem of part `r`
  auto map_part = [part](const void* mine, int r) {
    const char* p = reinterpret_cast<const char*>(mine) + (r % H - part) * static_cast<int>(sizeof(Smem));
    return map_rank(p, static_cast<uint32_t>(r / H));
  };
  // the tail kernel (run on the SMs the clusters leave idle) may start now: every CTA of this
  // launch is resident (the grid is as many clusters as fit)
  allow_dependents();
  const int64_t first = cid * polys / clusters;
  const int n = static_cast<int>((cid + 1) * polys / clusters - first);
  if (n == 0) return;  // n is the same in every CTA of the cluster

  // ---- per-thread tile offsets (words), so that every element of a round sits at a
  // compile-time offset from one of them ------------------------------------------------------
  // round A (stages 0..3): column tile rows g + 16 j       -> off_a[j & 1] + 16 S j
  // round B (stages 4..7): column tile rows 16 g + j       -> off_b[j & 1] + S j
  // round C (stages 8..11): row tile columns s + 16 j      -> off_c[j & 7] + (128 or 2048) (j >> 3)
  // round D (stages 12..15): row tile columns 16 s + 4 v + e -> off_d[v] + e (16-byte vectors)
  // (the tile being mid_tile's: the inverse's rounds D and C use row_tile on in[])
  int off_a[2], off_b[2], off_c[8], off_d[4];
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    off_a[p] = G::col_tile(g + 16 * p, col) - 16 * S * p;
    off_b[p] = G::col_tile(16 * g + p, col) - S * p;
  }
#pragma unroll
  for (int h = 0; h < 8; ++h) off_c[h] = mid_tile(rho, s + 16 * h);
#pragma unroll
  for (int v = 0; v < 4; ++v) off_d[v] = mid_tile(rho, 16 * s + 4 * v);
  auto at_c = [&](int j) { return off_c[j & 7] + (kBulk ? 2048 : 128) * (j >> 3); };

  // ---- the first phase's remote stores. Forward: rows 16 g + j of the column tile go to CTA
  // (16 g + j) / S, the same for all j, as its row-tile rows 16 g + j - S owner (column
  // S rank + col). Inverse: columns s + 16 j of the row tile go to CTA (s + 16 j) / S = j / (S / 16)
  // as its column-tile columns (s + 16 j) % S (row S rank + rho). Byte offsets within the tile:
  // element j at remote_off[j & 1] (+ 1024 j forward).
  const int owner_fwd = 16 * g / S;
  uint32_t remote_off[2];
#pragma unroll
  for (int p = 0; p < 2; ++p)
    remote_off[p] = 4u * static_cast<uint32_t>(
        INVERSE ? G::col_tile(S * rank + rho, (s + 16 * p) % S)
                : G::row_tile(16 * g + p - S * owner_fwd, S * rank + col) - 256 * p);
  // Bulk forward: rows 16 g + j of the column tile (this half-warp's 1 KB, g = owner_fwd) are
  // rewritten in place in the owner's block layout (element j at stage_off[j & 1] + 16 j) and sent
  // as one block.
  int stage_off[2];
#pragma unroll
  for (int p = 0; p < 2; ++p)
    stage_off[p] = G::bulk_tile(owner_fwd & 1, p, S * rank + col) - 256 * rank - 16 * p;
  // The parts' windows in the cluster's shared memory lie at fixed strides (checked once below):
  // part k's mid[0] at remote_mid + (k / H) rank_stride + (k % H) sizeof(Smem), so that the
  // inverse's C destinations cost no register each.
  const uint32_t remote_mid = map_part(sm.mid[0], INVERSE ? 0 : owner_fwd);
  const uint32_t rank_stride = G::kCtas > 1 ? map_rank(sm.mid[0], 1) - map_rank(sm.mid[0], 0) : 0;
  auto part_mid = [&](int k) {
    return remote_mid + static_cast<uint32_t>(k / H) * rank_stride +
           static_cast<uint32_t>((k % H) * sizeof(Smem));
  };
  // the owner's full[0] at a fixed distance from its mid[0] (one CTA's window is contiguous;
  // checked once below)
  const uint32_t full_delta = smem_addr(&sm.full[0]) - smem_addr(sm.mid[0]);

  // ---- the first phase's slice of polynomial `poly` into in[b], 4 x 16 bytes per thread (the
  // caller commits): chunks tid + kThreads u (u = 0..3) of the column tile (256 rows x S / 4
  // chunks) or the row tile (S rows x 64 chunks). The inverse's are kRowStep rows apart, an even
  // number, so that the tile's swizzle repeats: its offsets are chunk 0's plus constants (which
  // saved about 50 instructions of 64-bit address arithmetic per warp and item and 5 us at
  // L = 48, batch 16; the same for the forward's column tile, and for its output, cost 6-8 us).
  constexpr int kRowStep = G::kThreads / 64;
  const int in_tile = G::row_tile(tid >> 6, 4 * (tid & 63));  // (inverse) words
  const int in_poly = (S * rank + (tid >> 6)) * kSide + 4 * (tid & 63);
  auto prefetch = [&](int64_t poly, int b) {
    const uint32_t* p = src + poly * kN;
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      if (!INVERSE) {  // column tile
        const int chunk = tid + u * G::kThreads, r = chunk / (S / 4), c = 4 * (chunk % (S / 4));
        copy_async<16>(sm.in[b] + G::col_tile(r, c), p + r * kSide + S * rank + c);
      } else {  // row tile
        copy_async<16>(sm.in[b] + in_tile + 256 * kRowStep * u, p + in_poly + kSide * kRowStep * u);
      }
    }
  };

  // Twiddle slots of the four rounds (see radix16).
  auto col_slot_a = [](int t, int m) { return (1 << t) + m; };               // stages 0..3
  auto col_slot_b = [&](int t, int m) { return (16 << t) + (g << t) + m; };  // stages 4..7
  auto row_slot_c = [](int t, int m) { return (1 << t) + m; };               // stages 8..11
  auto row_slot_d = [&](int t, int m) { return tw_row_slot(t + 4, (s << t) + m); };  // 12..15
  const uint32_t* twr = sm.tw_row + rho * kTwRowWords;

  // ---- the rounds of item i. Forward: A (column tile in[]), B (-> the owners' row tiles mid[]),
  // C (row tile), D (-> dst). Inverse: D (row tile in[]), C (-> the owners' column tiles), B
  // (column tile), A with the N^-1 scaling (-> dst). ------------------------------------------
  auto round_a = [&](uint32_t* tile, uint32_t (&x)[16], bool load) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      uint32_t& w = tile[off_a[j & 1] + 16 * S * j];
      if (load) x[j] = w; else w = x[j];
    }
  };
  auto round_b = [&](uint32_t* tile, uint32_t (&x)[16], bool load) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      uint32_t& w = tile[off_b[j & 1] + S * j];
      if (load) x[j] = w; else w = x[j];
    }
  };
  auto round_c = [&](uint32_t* tile, uint32_t (&x)[16], bool load) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      uint32_t& w = tile[at_c(j)];
      if (load) x[j] = w; else w = x[j];
    }
  };
  auto round_d = [&](uint32_t* tile, uint32_t (&x)[16], bool load) {
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      uint4* p = reinterpret_cast<uint4*>(tile + off_d[v]);
      if (load) {
        const uint4 u = *p;
        x[4 * v] = u.x, x[4 * v + 1] = u.y, x[4 * v + 2] = u.z, x[4 * v + 3] = u.w;
      } else {
        *p = make_uint4(x[4 * v], x[4 * v + 1], x[4 * v + 2], x[4 * v + 3]);
      }
    }
  };
  auto round1 = [&](int i, uint32_t q) {  // in place in in[i & 1]
    uint32_t x[16];
    if (!INVERSE) {
      round_a(sm.in[i & 1], x, true);
      radix16<false, false, true>(x, q, sm.tw_col[i & 1], col_slot_a);
      round_a(sm.in[i & 1], x, false);
    } else {
      round_d(sm.in[i & 1], x, true);
      radix16<true>(x, q, twr, row_slot_d);
      round_d(sm.in[i & 1], x, false);
    }
  };
  auto round2 = [&](int i, uint32_t q) {  // from in[i & 1] to the owners' mid[i & 1]
    uint32_t x[16];
    const uint32_t mid_off = (i & 1) * G::kMidBytes;
    const uint32_t full_off = full_delta - mid_off + (i & 1) * sizeof(uint64_t);  // from the data
    if (kBulk) {
      round_b(sm.in[i & 1], x, true);
      radix16<false>(x, q, sm.tw_col[i & 1], col_slot_b);
      uint32_t* blk = sm.in[i & 1] + 16 * S * g;  // column tile rows 16 g .. 16 g + 15
      __syncwarp();  // the half-warp's loads of its block are done
#pragma unroll
      for (int j = 0; j < 16; ++j) blk[stage_off[j & 1] + 16 * j] = x[j];
      fence_proxy_async_smem();
      __syncwarp();
      if (col == 0)
        bulk_copy_remote(remote_mid + mid_off + G::kBlockBytes * static_cast<uint32_t>(rank), blk,
                         G::kBlockBytes, remote_mid + mid_off + full_off);
    } else if (!INVERSE) {
      round_b(sm.in[i & 1], x, true);
      radix16<false>(x, q, sm.tw_col[i & 1], col_slot_b);
      const uint32_t base = remote_mid + mid_off;
#pragma unroll
      for (int j = 0; j < 16; ++j)
        store_async(base + remote_off[j & 1] + 1024 * j, x[j], base + full_off);
    } else {
      round_c(sm.in[i & 1], x, true);
      radix16<true>(x, q, twr, row_slot_c);
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const uint32_t base = part_mid(j / (S / 16)) + mid_off;
        store_async(base + remote_off[j & 1], x[j], base + full_off);
      }
    }
  };
  auto round3 = [&](int i, uint32_t q) {  // in place in mid[i & 1]
    uint32_t x[16];
    if (!INVERSE) {
      round_c(sm.mid[i & 1], x, true);
      radix16<false>(x, q, twr, row_slot_c);
      round_c(sm.mid[i & 1], x, false);
    } else {
      round_b(sm.mid[i & 1], x, true);
      radix16<true>(x, q, sm.tw_col[i & 1], col_slot_b);
      round_b(sm.mid[i & 1], x, false);
    }
  };
  auto round4 = [&](int i, uint32_t q, int64_t poly) {  // from mid[i & 1] to dst (canonical)
    uint32_t* out = dst + poly * kN;
    uint32_t x[16];
    if (!INVERSE) {
      round_d(sm.mid[i & 1], x, true);
      radix16<false>(x, q, twr, row_slot_d);
      const uint32_t two_q = register_two_q(q);
#pragma unroll
      for (int j = 0; j < 16; ++j) x[j] = csub(csub(x[j], two_q), q);  // [0, 4q) -> [0, q)
      // Staged through the tile so that a warp's 16-byte stores cover 512 contiguous bytes (from
      // the registers they would sit 64 bytes apart per lane: 16 lines per store instruction).
      // A warp holds two whole rows (rho = tid >> 4), so it stages and stores only its own:
      // row 2 w + u / 2, columns 4 lane + 128 (u % 2), behind a warp barrier.
      round_d(sm.mid[i & 1], x, false);
      __syncwarp();
      const int lane = tid & 31, r0 = tid >> 5 << 1;
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int r = r0 + (u >> 1), c = 4 * lane + 128 * (u & 1);
        *reinterpret_cast<uint4*>(out + (S * rank + r) * kSide + c) =
            *reinterpret_cast<const uint4*>(sm.mid[i & 1] + mid_tile(r, c));
      }
    } else {
      round_a(sm.mid[i & 1], x, true);
      radix16<true, true>(x, q, sm.tw_col[i & 1], col_slot_a, sm.scale[i & 1]);
      uint32_t* o = out + g * kSide + S * rank + col;
#pragma unroll
      for (int j = 0; j < 16; ++j) o[16 * j * kSide] = x[j];
    }
  };

  // ---- the limbs this cluster touches: their table rows and primes, once
  const int limb0 = static_cast<int>(first / batch);
  const int span = static_cast<int>((first + n - 1) / batch) - limb0 + 1;  // <= kMaxLimbSpan (host)
  for (int k = tid; k < span; k += G::kThreads) {
    const int row = t.rows[limb0 + k];
    sm.limb_row[k] = row, sm.limb_q[k] = t.moduli[row];
  }
  part_sync();
  ItemCursor ahead = {first % batch, 0};  // the next item to look up
  auto take = [&]() {
    const WorkItem w = ahead.item(limb0, t.limbs, sm.limb_row, sm.limb_q);
    ahead.advance(batch);
    return w;
  };

  // ---- twiddles. Which table row each buffer holds (or is receiving):
  //   tw_col[b] (by item parity): col_tab0 / col_tab1; the inverse's scale[b][2..3] are derived
  //     (finish_scale) after the copies land: scale_due0 / scale_due1;
  //   tw_row: row_tab. Forward: copied whole at P4 (issue_tw_row / gather_tw_row); inverse: computed by
  //     compute_tw_row at P1 before round D from factors staged in row_fac (staged_row) at P3
  //     one iteration ahead.
  // Each copy is issued as soon as the old contents' last reader is past a barrier and waited for
  // just before its first reader (the schedule at the loop). Scalars, not arrays: indexed by
  // i & 1 an array is a stack slot.
  int col_tab0 = -1, col_tab1 = -1, row_tab = -1, staged_row = -1;
  bool scale_due0 = false, scale_due1 = false;
  auto issue_col = [&](int b, int row) {
    if ((b ? col_tab1 : col_tab0) == row) return;
    if (INVERSE) issue_tw_col_inverse<C>(sm.tw_col[b], sm.scale[b], t, row, tid);
    else issue_tw_col<C, false>(sm.tw_col[b], sm.scale[b], t, row, tid);
    if (b) col_tab1 = row, scale_due1 = INVERSE;
    else col_tab0 = row, scale_due0 = INVERSE;
  };
  auto finish_col = [&](int b, uint32_t q) {  // after the copies of issue_col(b) have landed
    if (!INVERSE || !(b ? scale_due1 : scale_due0)) return;
    if (tid == 0) finish_scale(sm.scale[b], sm.tw_col[b], q);
    if (b) scale_due1 = false; else scale_due0 = false;
  };
  auto issue_row = [&](int row) {  // forward: the row table. Returns whether it loads.
    if (row_tab == row) return false;
    if (!t.tw_rows) gather_tw_row<C>(sm.tw_row, t, row, rank, tid);
    else if (tid == 0) issue_tw_row<C>(sm.tw_row, t, row, rank, &sm.row_bar);
    row_tab = row;
    return true;
  };
  auto stage_row = [&](int row) {  // inverse: compute_tw_row's factors of table row `row`
    if (staged_row == row) return;
    issue_row_factors<C>(row_fac, t, row, rank, tid);
    staged_row = row;
  };

  // ---- item 0 and the first phase of item 1 ----------------------------------------------------
  // full[b] counts the bytes of items b, b + 2, ... arriving in mid[b]: armed (this CTA's one
  // arrival + the tile's bytes expected) for item i + 2 as soon as item i has completed it.
  if (tid == 0) {
    for (int k = 0; k < C; ++k) {  // the layout assumptions behind full_delta and part_mid
      if (map_part(&sm.full[0], k) != map_part(sm.mid[0], k) + full_delta) __trap();
      if (INVERSE && map_part(sm.mid[0], k) != part_mid(k)) __trap();
    }
    mbar_init(&sm.full[0], 1);
    mbar_init(&sm.full[1], 1);
    if (!INVERSE) mbar_init(&sm.row_bar, 1);
    if (kBulk) mbar_init(&sm.sent[0], C), mbar_init(&sm.sent[1], C);
    mbar_init_fence();
    mbar_expect(&sm.full[0], G::kMidBytes);
    if (n > 1) mbar_expect(&sm.full[1], G::kMidBytes);
  }
  // The prologue waits only for what item 0's first phase reads (its slice and column tables,
  // the inverse's row-table factors) and for the forward's item 1 slice: every part of every
  // cluster issues these loads at once, so each byte left out of the burst shortens the wait.
  // The forward's gathered first row table and the inverse's item 1 slice are issued after item
  // 0's first round instead (session 26, H100, L = 48, batch 16: 0-1.5 us forward, the loop's
  // SASS unchanged; 6 us inverse, whose loop also compiled faster: 15-20 us at batch 64);
  // deferring the forward's item 1 slice the same way made its loop 2-5 us slower at batch 16.
  // (The bulk copy of the row table has no issue cost and goes out at once.)
  WorkItem cur = take();
  WorkItem nxt = n > 1 ? take() : cur;
  prefetch(cur.poly, 0);
  // The forward's item 0 row table, as if issued at P4 of iteration -1 and waited for at the
  // loop's first P3 (row_due): a bulk copy (psi_rows) at once, which costs the threads nothing
  // (session 28, H100, L = 48: 233.1-233.4 against 234.8-236.6 us at batch 16 when issued after
  // item 0's first round, 857 against 874-877 at batch 64, the loop compiled differently too);
  // gathered, after item 0's first round (below).
  bool row_due = false;  // forward: a row table issued at the last P4, not yet waited for
  if (!INVERSE && t.tw_rows) row_due = issue_row(cur.row);
  if (!INVERSE && n > 1) prefetch(nxt.poly, 1);
  issue_col(0, cur.row);
  issue_col(1, nxt.row);
  if (INVERSE) stage_row(cur.row);
  copy_async_commit();
  copy_async_wait<0>();
  part_sync();
  if (INVERSE) compute_tw_row<C>(sm.tw_row, row_fac, row_fac + 256, cur.q, tid), row_tab = cur.row;
  uint32_t row_phase = 0;  // forward: the parity of row_bar's next completion
  finish_col(0, cur.q);
  finish_col(1, nxt.q);
  cluster_sync_all();  // every CTA runs and has initialised its barriers before any st.async
  round1(0, cur.q);
  part_sync();
  // The forward's item 0 row table where it is gathered: the last commit group before the loop.
  // The inverse's item 1 slice and (as iteration -1 of the loop would) row-table factors: waited
  // for at the loop's first P1.
  if (!INVERSE && !t.tw_rows) row_due = issue_row(cur.row);
  if (INVERSE && n > 1) prefetch(nxt.poly, 1);
  if (INVERSE && n > 1) stage_row(nxt.row);
  if (INVERSE) copy_async_commit();
  round2(0, cur.q);
  copy_async_commit();

  // ---- the loop: iteration i completes item i and runs item i + 1's first phase. Four cp.async
  // commit groups per iteration (some empty), so the waits count statically:
  //   P1: forward: column table of item i + 2 (buffer i & 1; items i's readers are done);
  //       inverse: empty (item i + 1's row table is computed here if its row is new)
  //   P2: item i + 2's slice into in[i & 1] (bulk forward: empty)
  //   P3: inverse: the row-table factors of item i + 2 (row_fac; read at P1 before); bulk
  //       forward: item i + 2's slice into in[i & 1], once every owner has received item i's
  //       blocks from it (the TMA read them there)
  //   P4: forward: item i + 1's row table where its row is new (item i's rounds C, D are
  //       done): gather_tw_row's copies, or empty (issue_tw_row's bulk copy counts on
  //       row_bar); inverse: column table of item i + 2 (buffer i & 1)
  // wait<1> at P1 completes all but the last P4 group: item i + 1's slice, the forward's column
  // table of item i + 1 and the inverse's row-table factors of item i + 1 and column table of
  // item i.
  for (int i = 0; i < n; ++i) {
    const bool more = i + 1 < n;
    const WorkItem after = i + 2 < n ? take() : nxt;
    // P1
    copy_async_wait<1>();
    part_sync();  // (also: every thread's item i first phase is done with in[i & 1])
    finish_col(i & 1, cur.q);  // read by round 4 of item i, after the barrier in P3
    if (!INVERSE && i + 2 < n) issue_col(i & 1, after.row);
    copy_async_commit();
    if (INVERSE && more && row_tab != nxt.row) {  // (its factors were staged at the last P3)
      compute_tw_row<C>(sm.tw_row, row_fac, row_fac + 256, nxt.q, tid);
      row_tab = nxt.row;
      part_sync();
    }
    if (more) round1(i + 1, nxt.q);  // overlaps the arrival of item i
    // P2
    mbar_wait(&sm.full[i & 1], (i >> 1) & 1);  // mid[i & 1] holds item i
    if (tid == 0 && i + 2 < n) mbar_expect(&sm.full[i & 1], G::kMidBytes);
    // bulk forward: item i's blocks from every part have landed here, so each part's in[i & 1]
    // may be refilled (its prefetch, after round 3, waits for these arrivals)
    if (kBulk && tid < C) mbar_arrive_remote(map_part(&sm.sent[i & 1], tid));
    if (!kBulk && i + 2 < n) prefetch(after.poly, i & 1);
    copy_async_commit();
    // P3
    if (!INVERSE && row_due) {  // the row table issued at P4 of iteration i - 1
      if (!t.tw_rows) copy_async_wait<2>(), part_sync();  // (the P4 group, 2 groups since)
      else mbar_wait(&sm.row_bar, row_phase);
      row_phase ^= 1;
      row_due = false;
    }
    round3(i, cur.q);
    // Round 4 reads what round 3 wrote. Forward: rounds C and D exchange within a row, whose 16
    // threads are in one warp (a warp barrier is enough); inverse: rounds B and A within a column,
    // whose threads are in 8 or 16 warps. (Each item's first round is published to its second
    // by the barrier at P4.)
    if (INVERSE) part_sync();
    else __syncwarp();
    if (INVERSE && i + 2 < n) stage_row(after.row);
    if (kBulk && i + 2 < n) {  // (in the P3 group)
      mbar_wait(&sm.sent[i & 1], (i >> 1) & 1);
      prefetch(after.poly, i & 1);
    }
    copy_async_commit();
    round4(i, cur.q, cur.poly);
    // P4
    // Every thread here is done reading mid[i & 1]. The other CTAs write item i + 2 there only
    // after their full barrier for item i + 1 completes, which needs this CTA's item i + 1
    // stores below (the complete-tx releases, the wait acquires): so the buffer is free then.
    part_sync();
    if (!INVERSE && more) row_due = issue_row(nxt.row);
    if (INVERSE && i + 2 < n) issue_col(i & 1, after.row);
    copy_async_commit();
    if (more) {
      round2(i + 1, nxt.q);
      cur = nxt;
      nxt = after;
    }
  }
  cluster_sync_all();  // no CTA leaves while st.async data of the cluster may be in flight
#else
  __trap();  // launched only where the device reports compute capability 9.0 or newer
#endif
}

// The tail (ntt_stream_tail): a cluster needs 8 SMs of one GPC, so an H100 or H200 fits 15
// clusters and leaves 12 of its 132 SMs idle. The streamed two-phase kernel runs the launch's
// last polynomials there, launched as dependent on the cluster kernel, whose CTAs allow it at
// once: its blocks go to the idle SMs only. Per SM it is slower: one cluster does about the
// work of kTailSmsPerCluster SMs of it (H100, L = 48, batch 16: tails of 40 / 48 / 56
// polynomials took 242 / 241 / 258 us forward beside the clusters' 242 / 240 / 238; session 22).
// JAX_FHE_NTT_TAIL: polynomials for the tail (0: none); unset, the share below.
constexpr int64_t kTailSmsPerCluster = 12;
// The split form's forward does more per cluster (session 31; H100, L = 48: tails of 44 and 176
// polynomials at batch 16 and 64 took it from 61.6 to 63.2% and from 65.3 to 68.3% of copy; its
// inverse stayed best at kTailSmsPerCluster).
constexpr int64_t kSplitForwardTailSmsPerCluster = 13;
int64_t tail_polys(int64_t polys, int64_t batch, int64_t clusters, int64_t free_sms,
                   int64_t sms_per_cluster = kTailSmsPerCluster) {
  static const int64_t env = tuning_int("JAX_FHE_NTT_TAIL", -1);
  if (free_sms <= 0 || batch % 4 != 0) return 0;  // the streamed kernel's groups: 4 entries of a limb
  const int64_t want = env >= 0 ? env : polys * free_sms / (free_sms + clusters * sms_per_cluster);
  return std::max<int64_t>(0, std::min(want, polys - clusters)) / 4 * 4;
}

// The launch configuration of the kernel (grid: `clusters` clusters of C / H CTAs).
template <int C, int H, bool INVERSE>
cudaLaunchConfig_t cluster_config(int64_t clusters, cudaStream_t stream, cudaLaunchAttribute* attr) {
  using G = Cluster<C, H>;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(clusters * G::kCtas), 1, 1);
  cfg.blockDim = dim3(G::kBlockThreads, 1, 1);
  cfg.dynamicSmemBytes = H * sizeof(typename G::template Smem<INVERSE>);
  cfg.stream = stream;
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = G::kCtas;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

// Clusters of the kernel that fit on the device at once (0 if none or the query fails); also
// opts the kernel into its shared memory (and clusters of 16 CTAs into a non-portable size).
// Once per device.
template <int C, int H, bool INVERSE>
int64_t max_active_clusters() {
  return per_device([](int) -> int64_t {
    auto kernel = ntt_cluster_kernel<C, H, INVERSE>;
    constexpr int smem = static_cast<int>(H * sizeof(typename Cluster<C, H>::template Smem<INVERSE>));
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess)
      return 0;
    if (Cluster<C, H>::kCtas > 8 &&
        cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
      return 0;
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = cluster_config<C, H, INVERSE>(1, nullptr, attr);
    int clusters = 0;
    return cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) == cudaSuccess ? clusters : 0;
  });
}

template <int C, int H, bool INVERSE>
bool run_cluster(cudaStream_t stream, const PolyShape& s, const uint32_t* src, uint32_t* dst,
                 const Tables& t) {
  const int64_t fit = max_active_clusters<C, H, INVERSE>();
  if (fit <= 0) return false;
  const int64_t clusters = std::min(fit, s.polys), batch = s.polys / s.limbs;
  // the tail: the launch's last polynomials, on the SMs the clusters leave idle (only where
  // every cluster fits at once, so that the tail's blocks cannot take a cluster's SMs)
  const int64_t free_sms = sm_count() - clusters * (Cluster<C, H>::kCtas / Cluster<C, H>::kMinBlocks);
  int64_t tail = clusters == fit && pdl_enabled() ? tail_polys(s.polys, batch, clusters, free_sms) : 0;
  if (tail > 0 && !ntt_stream_tail(INVERSE, false, src, dst, s.polys - tail, tail, batch, t, free_sms, stream))
    tail = 0;  // (checked before anything is launched)
  const int64_t items = s.polys - tail;
  // the limbs of a cluster's range must fit its shared-memory limb table
  const int64_t most = (items + clusters - 1) / clusters;
  if ((most - 1) / batch + 2 > kMaxLimbSpan) return false;
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = cluster_config<C, H, INVERSE>(clusters, stream, attr);
  if (cudaLaunchKernelEx(&cfg, ntt_cluster_kernel<C, H, INVERSE>, src, dst, t, items, batch) != cudaSuccess) {
    cudaGetLastError();  // refused (e.g. no cluster of C can be scheduled): the caller falls back
    return false;
  }
  if (tail > 0) ntt_stream_tail(INVERSE, true, src, dst, s.polys - tail, tail, batch, t, free_sms, stream);
  return true;
}


// ---- The split form (ntt_split_kernel; the default since session 30, JAX_FHE_NTT_CLUSTER=3):
// the same 16 slices on clusters of 8 CTAs, but CTA k's first half runs the first phase of
// slices 2 k and 2 k + 1 and its second half the second phase of slices 2 k and 2 k + 1, one item
// behind. In the halves form both halves run the same phase, so their waits (barriers, the
// exchange, loads) fall together and the SM idles; here one half's waits are filled with the
// other's butterflies (H100, L = 48: forward 232.6-234.4 -> 219.4-221.4 us at batch 16, inverse
// 224.8-226.5 -> 207.9-211.2, and at batch 64 858 -> 833 / 838 -> 778; session 30). Forward: the
// column half sends its blocks by TMA as the bulk forward does, and the row half tells it when
// an in buffer's blocks have landed (sent[]: it may be refilled) and when a mid buffer is free
// again (freed[]). The two halves must not wait on each other (Nsight Compute, session 31: at
// first each spent 10-12% of its warp samples waiting for the other): the row half tells sent[]
// as soon as it sees the blocks (also during the item before), and the column half reloads
// after round A, by when the blocks it sent at the end of the previous item have landed. The
// split kernel went from 218.4-218.7 to 204.7 us at batch 16 (forward 208.1-208.2 us with its
// tail, 63.7% of copy; batch 64 776.1 us, 68.3%). Inverse: the row half sends by st.async, the
// column half frees the mid buffers. Both directions compute their row tables (compute_tw_row) from factors staged one
// item ahead.
// (Below "first half" and "second half" are the CTA's halves by phase: forward, columns then
// rows; inverse, rows then columns.)
struct SplitSmem {
  static constexpr int kSliceWords = Cluster<16, 2>::kSliceWords;
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

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// compute_tw_row's factors of table row `row` for both row slices of CTA `cta`:
// pairs 0..127, then the bases of rows 32 cta .. 32 cta + 31 (8 each). Not inlined, like the
// other code that runs at limb changes only.
__device__ __noinline__ void split_stage_row_factors(uint32_t* fac, const Tables& t, int row, int cta, int tid) {
  const uint32_t* tw = t.tw + static_cast<int64_t>(row) * kN;
  const uint32_t* tws = t.tw_shoup + static_cast<int64_t>(row) * kN;
  issue_table_pairs<16>(fac, tw, tws, 128, tid);
  issue_row_bases<16>(fac + 256, tw, 2 * cta, tid);
  issue_row_bases<16>(fac + 384, tw, 2 * cta + 1, tid);
}

// The inverse's first phase (rounds D, C of row slices 2 cta, 2 cta + 1), sent by st.async to the
// column halves that own each element's column.
template <typename Take, typename Sync>
__device__ __forceinline__ void split_inverse_rows(SplitSmem& sm, const uint32_t* src, const Tables& t, int n,
                                                   int cta, int tid, WorkItem cur, WorkItem nxt, Take& take,
                                                   Sync half_sync) {
  using G = Cluster<16, 2>;
  constexpr int S = 16, kThreads = 256;
  constexpr uint32_t kMid = G::kMidBytes;
  const int rho = tid >> 4, s = tid & 15;  // owned row (in both slices), thread within the row
  int off_c[8], off_d[4];
#pragma unroll
  for (int h = 0; h < 8; ++h) off_c[h] = G::row_tile(rho, s + 16 * h);
#pragma unroll
  for (int v = 0; v < 4; ++v) off_d[v] = G::row_tile(rho, 16 * s + 4 * v);
  // element e (column s + 16 e) goes to column slice e: the column half of CTA e / 2, its
  // mid[.][e % 2], column-tile row 16 (2 cta + j) + rho, column s
  const uint32_t mid0 = map_rank(&sm.mid[0][0][0], 0);
  const uint32_t rank_stride = map_rank(&sm.mid[0][0][0], 1) - mid0;
  const uint32_t full_delta = smem_addr(&sm.full[0]) - smem_addr(&sm.mid[0][0][0]);
  uint32_t remote_off[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) remote_off[j] = 4u * static_cast<uint32_t>(G::col_tile(S * (2 * cta + j) + rho, s));
  constexpr int kRowStep = kThreads / 64;
  const int in_tile = G::row_tile(tid >> 6, 4 * (tid & 63));
  auto prefetch = [&](int64_t poly, int b) {
    const uint32_t* p = src + poly * kN;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int in_poly = (S * (2 * cta + j) + (tid >> 6)) * kSide + 4 * (tid & 63);
#pragma unroll
      for (int u = 0; u < 4; ++u)
        copy_async<16>(sm.in[b][j] + in_tile + 256 * kRowStep * u, p + in_poly + kSide * kRowStep * u);
    }
  };
  auto row_slot_c = [](int t_, int m) { return (1 << t_) + m; };
  auto row_slot_d = [&](int t_, int m) { return tw_row_slot(t_ + 4, (s << t_) + m); };
  int row_tab = -1, staged = cur.row;
  split_stage_row_factors(sm.row_fac, t, cur.row, cta, tid);
  prefetch(cur.poly, 0);
  copy_async_commit();
  cluster_sync_all();
  for (int i = 0; i < n; ++i) {
    const int b = i & 1;
    copy_async_wait<0>();  // item i's slices (and its row's factors where new)
    half_sync();           // ... visible to all; every thread is done with item i - 1
    if (row_tab != cur.row) {
      compute_tw_row<16>(sm.tw_row, sm.row_fac, sm.row_fac + 256, cur.q, tid);
      compute_tw_row<16>(sm.tw_row + S * kTwRowWords, sm.row_fac, sm.row_fac + 384, cur.q, tid);
      row_tab = cur.row;
      half_sync();
    }
    if (i + 1 < n) {
      prefetch(nxt.poly, b ^ 1);
      if (staged != nxt.row) split_stage_row_factors(sm.row_fac, t, nxt.row, cta, tid), staged = nxt.row;
    }
    copy_async_commit();
#pragma unroll
    for (int j = 0; j < 2; ++j) {  // round D, in place
      uint32_t x[16];
      uint32_t* tile = sm.in[b][j];
      const uint32_t* twr = sm.tw_row + (S * j + rho) * kTwRowWords;
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const uint4 u = *reinterpret_cast<const uint4*>(tile + off_d[v]);
        x[4 * v] = u.x, x[4 * v + 1] = u.y, x[4 * v + 2] = u.z, x[4 * v + 3] = u.w;
      }
      radix16<true>(x, cur.q, twr, row_slot_d);
#pragma unroll
      for (int v = 0; v < 4; ++v)
        *reinterpret_cast<uint4*>(tile + off_d[v]) = make_uint4(x[4 * v], x[4 * v + 1], x[4 * v + 2], x[4 * v + 3]);
    }
    __syncwarp();  // rounds D and C exchange within a row, whose 16 threads are in one warp
    if (i >= 2) mbar_wait(&sm.freed[b], ((i - 2) >> 1) & 1);  // the owners are done with item i - 2
#pragma unroll
    for (int j = 0; j < 2; ++j) {  // round C, to the owners
      uint32_t x[16];
      const uint32_t* tile = sm.in[b][j];
      const uint32_t* twr = sm.tw_row + (S * j + rho) * kTwRowWords;
#pragma unroll
      for (int e = 0; e < 16; ++e) x[e] = tile[off_c[e & 7] + 128 * (e >> 3)];
      radix16<true>(x, cur.q, twr, row_slot_c);
#pragma unroll
      for (int e = 0; e < 16; ++e) {
        const uint32_t base = mid0 + static_cast<uint32_t>(e >> 1) * rank_stride;
        store_async(base + (2 * b + (e & 1)) * kMid + remote_off[j], x[e], base + full_delta + 8 * b);
      }
    }
    cur = nxt;
    if (i + 2 < n) nxt = take();
  }
}

// The inverse's second phase (rounds B, A with the N^-1 scaling, of column slices 2 cta, 2 cta + 1)
// and the output.
template <typename Take, typename Sync>
__device__ __forceinline__ void split_inverse_columns(SplitSmem& sm, uint32_t* dst, const Tables& t, int n,
                                                      int cta, int tid, WorkItem cur, WorkItem nxt, Take& take,
                                                      Sync half_sync) {
  using G = Cluster<16, 2>;
  constexpr int S = 16;
  constexpr uint32_t kMid = G::kMidBytes;
  const int col = tid % S, g = tid / S;
  int off_a[2], off_b[2];
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    off_a[p] = G::col_tile(g + 16 * p, col) - 16 * S * p;
    off_b[p] = G::col_tile(16 * g + p, col) - S * p;
  }
  auto col_slot_a = [](int t_, int m) { return (1 << t_) + m; };
  auto col_slot_b = [&](int t_, int m) { return (16 << t_) + (g << t_) + m; };
  int col_tab0 = -1, col_tab1 = -1;
  bool due0 = false, due1 = false;
  auto issue_col = [&](int b, int row) {
    if ((b ? col_tab1 : col_tab0) == row) return;
    issue_tw_col_inverse<16>(sm.tw_col[b], sm.scale[b], t, row, tid);
    if (b) col_tab1 = row, due1 = true; else col_tab0 = row, due0 = true;
  };
  issue_col(0, cur.row);
  copy_async_commit();
  cluster_sync_all();
  for (int i = 0; i < n; ++i) {
    const int b = i & 1;
    copy_async_wait<0>();  // item i's column table
    half_sync();           // ... visible to all; every thread is done with item i - 1
    if (i >= 1 && i + 1 < n && tid < 8)  // mid[b ^ 1] (item i - 1) is free for item i + 1
      mbar_arrive_remote(map_rank(&sm.freed[b ^ 1], static_cast<uint32_t>(tid)));
    if (b ? due1 : due0) {  // (read by round A, after the barrier below)
      if (tid == 0) finish_scale(sm.scale[b], sm.tw_col[b], cur.q);
      if (b) due1 = false; else due0 = false;
    }
    if (i + 1 < n) issue_col(b ^ 1, nxt.row);
    copy_async_commit();
    mbar_wait(&sm.full[b], (i >> 1) & 1);
    if (tid == 0 && i + 2 < n) mbar_expect(&sm.full[b], 2 * kMid);
#pragma unroll
    for (int j = 0; j < 2; ++j) {  // round B, in place
      uint32_t x[16];
      uint32_t* tile = sm.mid[b][j];
#pragma unroll
      for (int e = 0; e < 16; ++e) x[e] = tile[off_b[e & 1] + S * e];
      radix16<true>(x, cur.q, sm.tw_col[b], col_slot_b);
#pragma unroll
      for (int e = 0; e < 16; ++e) tile[off_b[e & 1] + S * e] = x[e];
    }
    half_sync();  // rounds B and A exchange within a column, across warps
    uint32_t* out = dst + cur.poly * kN;
#pragma unroll
    for (int j = 0; j < 2; ++j) {  // round A with N^-1, to dst
      uint32_t x[16];
      const uint32_t* tile = sm.mid[b][j];
#pragma unroll
      for (int e = 0; e < 16; ++e) x[e] = tile[off_a[e & 1] + 16 * S * e];
      radix16<true, true>(x, cur.q, sm.tw_col[b], col_slot_a, sm.scale[b]);
      uint32_t* o = out + g * kSide + S * (2 * cta + j) + col;
#pragma unroll
      for (int e = 0; e < 16; ++e) o[16 * e * kSide] = x[e];
    }
    cur = nxt;
    if (i + 2 < n) nxt = take();
  }
}
#endif

template <bool INVERSE>
__global__ void __launch_bounds__(512, 1)
    ntt_split_kernel(const uint32_t* src, uint32_t* dst, Tables t, int64_t polys, int64_t batch) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using G = Cluster<16, 2>;
  constexpr int S = 16, kThreads = 256;
  constexpr uint32_t kMid = G::kMidBytes;  // one slice's tile: 16 KB
  extern __shared__ __align__(16) uint32_t smem_words[];
  SplitSmem& sm = *reinterpret_cast<SplitSmem*>(smem_words);
  const bool second_half = threadIdx.x >= kThreads;  // the first half runs the first phase
  const int tid = static_cast<int>(threadIdx.x) & (kThreads - 1);
  const int cta = static_cast<int>(cluster_rank());  // slices 2 cta, 2 cta + 1
  const int64_t clusters = gridDim.x / 8, cid = blockIdx.x / 8;
  allow_dependents();
  const int64_t first = cid * polys / clusters;
  const int n = static_cast<int>((cid + 1) * polys / clusters - first);
  if (n == 0) return;

  const int limb0 = static_cast<int>(first / batch);
  const int span = static_cast<int>((first + n - 1) / batch) - limb0 + 1;
  for (int k = threadIdx.x; k < span; k += 2 * kThreads) {
    const int row = t.rows[limb0 + k];
    sm.limb_row[k] = row, sm.limb_q[k] = t.moduli[row];
  }
  if (threadIdx.x == 0) {
    mbar_init(&sm.full[0], 1), mbar_init(&sm.full[1], 1);
    mbar_init(&sm.sent[0], 8), mbar_init(&sm.sent[1], 8);
    mbar_init(&sm.freed[0], 8), mbar_init(&sm.freed[1], 8);
    mbar_init_fence();
    mbar_expect(&sm.full[0], 2 * kMid);
    if (n > 1) mbar_expect(&sm.full[1], 2 * kMid);
  }
  __syncthreads();
  ItemCursor ahead = {first % batch, 0};
  auto take = [&]() {
    const WorkItem w = ahead.item(limb0, t.limbs, sm.limb_row, sm.limb_q);
    ahead.advance(batch);
    return w;
  };
  auto half_sync = [second_half]() {
    asm volatile("bar.sync %0, %1;" ::"r"(1 + static_cast<int>(second_half)), "n"(kThreads) : "memory");
  };
  WorkItem cur = take();
  WorkItem nxt = n > 1 ? take() : cur;

  if constexpr (INVERSE) {
    if (!second_half) split_inverse_rows(sm, src, t, n, cta, tid, cur, nxt, take, half_sync);
    else split_inverse_columns(sm, dst, t, n, cta, tid, cur, nxt, take, half_sync);
  } else if (!second_half) {
    // ---------------------------------------------------------------- forward, column half
    // (inline here, not a function like the inverse's halves: moved into one, the forward's
    // code compiled to another schedule, not measured)
    const int col = tid % S, g = tid / S;  // owned column, row group = the owner slice of rows 16 g ..
    int off_a[2], off_b[2], stage_off[2][2];
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      off_a[p] = G::col_tile(g + 16 * p, col) - 16 * S * p;
      off_b[p] = G::col_tile(16 * g + p, col) - S * p;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int rank = 2 * cta + j;
        stage_off[j][p] = G::bulk_tile(g & 1, p, S * rank + col) - 256 * rank - 16 * p;
      }
    }
    const uint32_t remote_mid = map_rank(&sm.mid[0][g & 1][0], static_cast<uint32_t>(g >> 1));
    const uint32_t remote_full = map_rank(&sm.full[0], static_cast<uint32_t>(g >> 1));
    auto prefetch = [&](int64_t poly, int b) {
      const uint32_t* p = src + poly * kN;
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int chunk = tid + u * kThreads, r = chunk / (S / 4), c = 4 * (chunk % (S / 4));
          copy_async<16>(sm.in[b][j] + G::col_tile(r, c), p + r * kSide + S * (2 * cta + j) + c);
        }
    };
    int col_tab0 = -1, col_tab1 = -1;
    auto issue_col = [&](int b, int row) {
      if ((b ? col_tab1 : col_tab0) == row) return;
      issue_tw_col<16, false>(sm.tw_col[b], nullptr, t, row, tid);
      if (b) col_tab1 = row; else col_tab0 = row;
    };
    auto col_slot_a = [](int t_, int m) { return (1 << t_) + m; };
    auto col_slot_b = [&](int t_, int m) { return (16 << t_) + (g << t_) + m; };
    prefetch(cur.poly, 0);
    issue_col(0, cur.row);
    copy_async_commit();
    cluster_sync_all();  // every CTA's barriers are initialised before any remote operation
    for (int i = 0; i < n; ++i) {
      const int b = i & 1;
      copy_async_wait<0>();  // item i's slices and column table
      half_sync();           // ... visible to all; every thread is done with item i - 1
#pragma unroll
      for (int j = 0; j < 2; ++j) {  // round A, in place
        uint32_t x[16];
        uint32_t* tile = sm.in[b][j];
#pragma unroll
        for (int e = 0; e < 16; ++e) x[e] = tile[off_a[e & 1] + 16 * S * e];
        radix16<false, false, true>(x, cur.q, sm.tw_col[b], col_slot_a);
#pragma unroll
        for (int e = 0; e < 16; ++e) tile[off_a[e & 1] + 16 * S * e] = x[e];
      }
      // item i + 1's loads, once item i - 1's blocks have left in[b ^ 1] (after round A, so
      // that its blocks, sent at the end of the previous item, have had time to land)
      if (i + 1 < n) {
        if (i >= 1) mbar_wait(&sm.sent[b ^ 1], ((i - 1) >> 1) & 1);
        prefetch(nxt.poly, b ^ 1);
        issue_col(b ^ 1, nxt.row);
      }
      copy_async_commit();
      half_sync();
      if (i >= 2) mbar_wait(&sm.freed[b], ((i - 2) >> 1) & 1);  // the owners are done with item i - 2
#pragma unroll
      for (int j = 0; j < 2; ++j) {  // round B, then the blocks to their owners
        uint32_t x[16];
        uint32_t* tile = sm.in[b][j];
#pragma unroll
        for (int e = 0; e < 16; ++e) x[e] = tile[off_b[e & 1] + S * e];
        radix16<false>(x, cur.q, sm.tw_col[b], col_slot_b);
        uint32_t* blk = tile + 16 * S * g;
        __syncwarp();
#pragma unroll
        for (int e = 0; e < 16; ++e) blk[stage_off[j][e & 1] + 16 * e] = x[e];
        fence_proxy_async_smem();
        __syncwarp();
        if (col == 0)
          bulk_copy_remote(remote_mid + b * 2 * kMid + G::kBlockBytes * static_cast<uint32_t>(2 * cta + j), blk,
                           G::kBlockBytes, remote_full + 8 * b);
      }
      cur = nxt;
      if (i + 2 < n) nxt = take();
    }
  } else {
    // ---------------------------------------------------------------- forward, row half
    const int rho = tid >> 4, s = tid & 15;  // slice j: row rho ^ j (so both slices share offsets)
    int off_c[8], off_d[4];
#pragma unroll
    for (int h = 0; h < 8; ++h) off_c[h] = G::bulk_tile(0, rho, s + 16 * h);
#pragma unroll
    for (int v = 0; v < 4; ++v) off_d[v] = G::bulk_tile(0, rho, 16 * s + 4 * v);
    auto row_slot_c = [](int t_, int m) { return (1 << t_) + m; };
    auto row_slot_d = [&](int t_, int m) { return tw_row_slot(t_ + 4, (s << t_) + m); };
    // The row tables are computed (compute_tw_row, as the inverse does) from factors staged one
    // item ahead: the copied ones (psi_rows, 64 KB per CTA and row) were 3-6 us slower at L = 48,
    // batch 16, mostly in the start's burst of loads (H100, session 30).
    int row_tab = cur.row, staged = cur.row;
    bool row_due = true;
    split_stage_row_factors(sm.row_fac, t, cur.row, cta, tid);
    copy_async_commit();
    cluster_sync_all();
    // sent[]: thread r < 8 tells CTA r's column half that its blocks of an item have landed
    // here. It tells as soon as it sees them, also while the previous item is still being
    // processed (arrived_next), so that the column half can reload its input buffer early.
    bool arrived_next = false;
    auto tell_next_landed = [&](int i) {
      const int bn = (i + 1) & 1;
      if (tid < 8 && !arrived_next && i + 1 < n && mbar_test(&sm.full[bn], ((i + 1) >> 1) & 1)) {
        mbar_arrive_remote(map_rank(&sm.sent[bn], static_cast<uint32_t>(tid)));
        arrived_next = true;
      }
    };
    for (int i = 0; i < n; ++i) {
      const int b = i & 1;
      mbar_wait(&sm.full[b], (i >> 1) & 1);
      if (tid == 0 && i + 2 < n) mbar_expect(&sm.full[b], 2 * kMid);
      if (tid < 8 && !arrived_next) mbar_arrive_remote(map_rank(&sm.sent[b], static_cast<uint32_t>(tid)));
      arrived_next = false;
      if (row_due) {  // (every reader of the old table is past the barrier at the end)
        copy_async_wait<0>();
        half_sync();
        compute_tw_row<16>(sm.tw_row, sm.row_fac, sm.row_fac + 256, cur.q, tid);
        compute_tw_row<16>(sm.tw_row + S * kTwRowWords, sm.row_fac, sm.row_fac + 384, cur.q, tid);
        half_sync();
        row_due = false;
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {  // round C, in place
        uint32_t x[16];
        uint32_t* tile = sm.mid[b][j];
        const uint32_t* twr = sm.tw_row + (S * j + (rho ^ j)) * kTwRowWords;
#pragma unroll
        for (int e = 0; e < 16; ++e) x[e] = tile[off_c[e & 7] + 2048 * (e >> 3)];
        radix16<false>(x, cur.q, twr, row_slot_c);
#pragma unroll
        for (int e = 0; e < 16; ++e) tile[off_c[e & 7] + 2048 * (e >> 3)] = x[e];
      }
      tell_next_landed(i);
      __syncwarp();  // rounds C and D exchange within a row, whose 16 threads are in one warp
      uint32_t* out = dst + cur.poly * kN;
#pragma unroll
      for (int j = 0; j < 2; ++j) {  // round D, staged, to dst
        uint32_t x[16];
        uint32_t* tile = sm.mid[b][j];
        const uint32_t* twr = sm.tw_row + (S * j + (rho ^ j)) * kTwRowWords;
#pragma unroll
        for (int v = 0; v < 4; ++v) {
          const uint4 u = *reinterpret_cast<const uint4*>(tile + off_d[v]);
          x[4 * v] = u.x, x[4 * v + 1] = u.y, x[4 * v + 2] = u.z, x[4 * v + 3] = u.w;
        }
        radix16<false>(x, cur.q, twr, row_slot_d);
        const uint32_t two_q = register_two_q(cur.q);
#pragma unroll
        for (int e = 0; e < 16; ++e) x[e] = csub(csub(x[e], two_q), cur.q);
#pragma unroll
        for (int v = 0; v < 4; ++v)
          *reinterpret_cast<uint4*>(tile + off_d[v]) = make_uint4(x[4 * v], x[4 * v + 1], x[4 * v + 2], x[4 * v + 3]);
        __syncwarp();
        const int lane = tid & 31, r0 = tid >> 5 << 1;
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int r = r0 + (u >> 1), c = 4 * lane + 128 * (u & 1);
          *reinterpret_cast<uint4*>(out + (S * (2 * cta + j) + r) * kSide + c) =
              *reinterpret_cast<const uint4*>(tile + G::bulk_tile(j, r, c));
        }
      }
      tell_next_landed(i);
      half_sync();  // every row thread is done reading mid[b] and tw_row
      if (tid < 8 && i + 2 < n) mbar_arrive_remote(map_rank(&sm.freed[b], static_cast<uint32_t>(tid)));
      if (i + 1 < n && nxt.row != row_tab) {
        if (nxt.row != staged) {
          split_stage_row_factors(sm.row_fac, t, nxt.row, cta, tid);
          copy_async_commit();
          staged = nxt.row;
        }
        row_tab = nxt.row;
        row_due = true;
      }
      cur = nxt;
      if (i + 2 < n) nxt = take();
    }
  }
  cluster_sync_all();  // no CTA leaves while data or arrivals of the cluster may be in flight
#else
  __trap();
#endif
}

template <bool INVERSE>
int64_t max_active_split_clusters() {
  return per_device([](int) -> int64_t {
    constexpr int smem = static_cast<int>(sizeof(SplitSmem));
    if (cudaFuncSetAttribute(ntt_split_kernel<INVERSE>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess)
      return 0;
    cudaLaunchAttribute attr[1];
    cudaLaunchConfig_t cfg = cluster_config<16, 2, false>(1, nullptr, attr);
    cfg.dynamicSmemBytes = smem;
    int clusters = 0;
    return cudaOccupancyMaxActiveClusters(&clusters, ntt_split_kernel<INVERSE>, &cfg) == cudaSuccess ? clusters : 0;
  });
}

template <bool INVERSE>
bool run_split(cudaStream_t stream, const PolyShape& s, const uint32_t* src, uint32_t* dst, const Tables& t) {
  const int64_t fit = max_active_split_clusters<INVERSE>();
  if (fit <= 0) return false;
  const int64_t clusters = std::min(fit, s.polys), batch = s.polys / s.limbs;
  const int64_t free_sms = sm_count() - clusters * 8;
  constexpr int64_t kSmsPerCluster = INVERSE ? kTailSmsPerCluster : kSplitForwardTailSmsPerCluster;
  int64_t tail = clusters == fit && pdl_enabled() ? tail_polys(s.polys, batch, clusters, free_sms, kSmsPerCluster) : 0;
  if (tail > 0 && !ntt_stream_tail(INVERSE, false, src, dst, s.polys - tail, tail, batch, t, free_sms, stream))
    tail = 0;
  const int64_t items = s.polys - tail;
  const int64_t most = (items + clusters - 1) / clusters;
  if ((most - 1) / batch + 2 > kMaxLimbSpan) return false;
  cudaLaunchAttribute attr[1];
  cudaLaunchConfig_t cfg = cluster_config<16, 2, false>(clusters, stream, attr);
  cfg.dynamicSmemBytes = sizeof(SplitSmem);
  if (cudaLaunchKernelEx(&cfg, ntt_split_kernel<INVERSE>, src, dst, t, items, batch) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (tail > 0) ntt_stream_tail(INVERSE, true, src, dst, s.polys - tail, tail, batch, t, free_sms, stream);
  return true;
}

}  // namespace

// JAX_FHE_NTT_CLUSTER: unset, the default: where a launch has at least kAutoMinPolys
// polynomials, the split form (16 slices on clusters of 8 CTAs whose halves run different
// phases; session 30), with its tail, or where it cannot launch the 16-slice kernel on clusters
// of 8 CTAs of two halves (H = 2), the default of sessions 19-29 (the fastest of the other
// variants in both directions on the H100: benchmarks/RESULTS.md, session 19; fewer polynomials
// leave each cluster too few items to fill its pipeline, and the two-phase kernels win). Also
// for the forward on the H200 (until session 21 the forward there took the two-phase kernels; at
// L = 48, batch 16 they took 269-270 us against the halves form's 248 us without its tail:
// session 22; the split form was not measured there). Forced, at any size and in both
// directions: 3: the split form; 2: the halves form; 1 or 8: clusters of 8 CTAs (8 slices); 16:
// clusters of 16 CTAs (16 slices, two CTAs per SM). 0: never.
constexpr int64_t kAutoMinPolys = 128;
bool run_ntt_cluster(cudaStream_t stream, const PolyShape& s, const uint32_t* src, uint32_t* dst,
                     const Tables& t, bool inverse, bool lazy) {
  static const int64_t mode = tuning_int("JAX_FHE_NTT_CLUSTER", -1);
  if ((mode != -1 && mode != 1 && mode != 2 && mode != 3 && mode != 8 && mode != 16) || !lazy || s.log_n != kLogN ||
      cc_major() < 9)
    return false;
  if (mode == -1 && s.polys < kAutoMinPolys) return false;
  if ((mode == -1 || mode == 3) &&
      (inverse ? run_split<true>(stream, s, src, dst, t) : run_split<false>(stream, s, src, dst, t)))
    return true;
  if (mode == -1 || mode == 2 || mode == 3)  // (the split form refused: the halves form)
    return inverse ? run_cluster<16, 2, true>(stream, s, src, dst, t) : run_cluster<16, 2, false>(stream, s, src, dst, t);
  if (mode == 16)
    return inverse ? run_cluster<16, 1, true>(stream, s, src, dst, t) : run_cluster<16, 1, false>(stream, s, src, dst, t);
  return inverse ? run_cluster<8, 1, true>(stream, s, src, dst, t) : run_cluster<8, 1, false>(stream, s, src, dst, t);
}

}  // namespace ntt_cuda
}  // namespace jax_fhe
