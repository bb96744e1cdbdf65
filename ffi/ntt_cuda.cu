// Negacyclic NTT / INTT on CUDA, bit-identical to ntt_cpu.cc.
//
// N = n1 * N2 is viewed as an n1 x N2 row-major matrix (n1 = 2^K1 rows, N2 = 2^K2 columns,
// K1 = floor(log N / 2)). The first K1 Cooley-Tukey stages only pair elements of the same
// column, the last K2 stages only elements of the same row, so the transform is two kernels:
//   phase 1 ("columns"): a block loads 16 columns (an n1 x 16 tile), runs stages 0..K1-1;
//   phase 2 ("rows"):    a block loads RPB whole rows, runs stages K1..logN-1.
// The inverse runs the mirror image (rows first, then columns, then the N^-1 scaling).
// The tiles of both phases (columns_tile, rows_tile) are in ntt_device.cuh, where the fused
// key product (key_product_cuda.cu) reuses the rows tile through its store hook.
//
// Inside a phase every thread holds R = 8 elements and performs up to three stages in
// registers (a radix-8 round); rounds exchange data through shared memory.
//
// Twiddles: stage s pairs (j, j + N/2^(s+1)) with tw[2^s + (j >> (logN - s))]. For a
// sub-transform of size 2^K at local stage sigma this is tw[(W << sigma) + (u >> (K - sigma))]
// where u is the local index and W = 1 for a column, W = n1 + row for a row. Where few
// polynomials share a prime (tuning.h: ntt_rows_computed_twiddles) the rows phase computes each
// row's twiddles into shared memory instead (compute_row_twiddles in ntt_device.cuh).
//
// Lazy mode (every prime of the call below 2^30): Harvey butterflies keep values in [0, 4q)
// (forward) or [0, 2q) (inverse), which removes most conditional subtractions; outputs are
// reduced to [0, q) on the final store, so both modes give the same bits.
//
// Batches: a thread runs the same positions of P polynomials that share one prime (the same
// limb of P consecutive batch entries), so each twiddle it loads and each index it computes
// serves P butterflies, and the P independent chains give the scheduler instruction-level
// parallelism. P is 4, 2 or 1 (the largest that divides the batch). Where the batch gives
// P < 4 but the limbs' rows repeat, the forward rows phase can instead group limbs that share a
// row (row_groups; ntt_rows_gathered_kernel).
//
// Which kernel runs (docs/kernels.md has the table):
//   * N <= 2^kMaxWholeLog (PIR's ring): one block runs the whole transform (ntt_whole_kernel),
//     so each coefficient crosses HBM once each way;
//   * N = 2^16, at least kClusterMinPolys polynomials, primes below 2^30, sm_90: the single-pass
//     cluster kernel (ntt_cluster_dispatch.cu), whose launch's last polynomials run beside it on
//     the SMs its clusters leave idle, by the streamed kernel (ntt_stream_kernel: both phases in
//     one persistent launch, chunk by chunk, phase 2 reading from L2; ntt_stream_tail);
//   * otherwise the two phases, one launch each (the forward rows phase over gathered row
//     groups where the batch gives P < 4 but rows repeat).
// The lifted forward transform (jax_fhe_ntt_forward_lift) loads int32 digits and lifts them to
// each limb's prime in the one-block kernel (NttForwardLiftCudaImpl).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "cuda_device.cuh"
#include "ntt_args.h"
#include "ntt_device.cuh"
#include "tuning.h"

namespace jax_fhe {

namespace {

using namespace ntt_cuda;

template <int K1, int P, bool INVERSE, bool LAZY, int MINB>
__global__ void __launch_bounds__(ColsGeometry<K1, P>::threads, MINB)
    ntt_columns_kernel(const uint32_t* src, uint32_t* dst,  // may alias (in place)
                       Tables t) {
  extern __shared__ uint32_t smem[];  // ColsGeometry<K1, P>::smem_words (64 KB at P = 4, N = 2^16)
  allow_dependents();  // programmatic dependent launch (cuda_device.cuh)
  wait_for_producer();
  columns_tile<K1, P, INVERSE, LAZY, false>(src, dst, t, blockIdx.x, t.group_of(blockIdx.y), smem);
}

template <int K2, int P, bool INVERSE, bool LAZY, int MINB>
__global__ void __launch_bounds__(RowsGeometry<K2>::threads, MINB)
    ntt_rows_kernel(const uint32_t* src, uint32_t* dst,  // may alias (in place)
                    Tables t) {
  using G = RowsGeometry<K2>;
  // the rows' twiddles computed, not read (tuning.h), at N = 2^15 and 2^16
  constexpr bool kComputedTw = K2 == 8 && ntt_rows_computed_twiddles(P, INVERSE);
  __shared__ uint32_t smem[G::template smem_words<P>];
  __shared__ uint2 tw_rows[kComputedTw ? G::rows_per_block * G::n2 : 1];
  allow_dependents();
  wait_for_producer();
  rows_tile<K2, P, INVERSE, LAZY, false, kComputedTw>(src, dst, t, blockIdx.x, t.group_of(blockIdx.y), smem,
                                                      PlainStore{}, GlobalLoad<false>{}, tw_rows);
}

// The forward rows phase over gathered row groups (RowGroups): each block transforms the limbs
// of one group, which share a prime, so each twiddle it loads and each index it computes serves
// all of them, as in a P = 4 launch. One code path per group size (block-uniform branch).
template <int K2, bool LAZY, int MINB>
__global__ void __launch_bounds__(RowsGeometry<K2>::threads, MINB)
    ntt_rows_gathered_kernel(const uint32_t* src, uint32_t* dst,  // may alias (in place)
                             Tables t, RowGroups g) {
  __shared__ uint32_t smem[RowsGeometry<K2>::template smem_words<kRowGroupSize>];
  allow_dependents();
  wait_for_producer();
  const int64_t entry = blockIdx.y / static_cast<unsigned>(g.count);
  const int gi = static_cast<int>(blockIdx.y % static_cast<unsigned>(g.count));
  auto run = [&](auto size) {
    constexpr int P = decltype(size)::value;
    rows_tile_of<K2, P, false, LAZY, false>(src, dst, t, blockIdx.x,
                                            GatheredMembers<P>::at(t, g, entry, gi), smem);
  };
  static_assert(kRowGroupSize == 4, "one branch per group size below");
  if (g.limb[gi][3] >= 0) run(std::integral_constant<int, 4>{});
  else if (g.limb[gi][2] >= 0) run(std::integral_constant<int, 3>{});
  else if (g.limb[gi][1] >= 0) run(std::integral_constant<int, 2>{});
  else run(std::integral_constant<int, 1>{});
}

// Whole transform in one block, for N <= 2^kMaxWholeLog (tuning.h; the PIR ring, N = 4096, and
// the small test sizes): N / 8 threads hold a polynomial (P of them, as above) and run all log N stages
// as radix-8 rounds with shared-memory exchanges, so each coefficient crosses HBM once each way
// and there is one launch instead of two. The twiddle index of a full transform is the column
// phase's (W = 1, K = log N). Forward output is reduced from [0, 4q); the inverse scales by N^-1.
// Whether P polynomials of 2^log_n words (one pad word per 32) fit the 48 KB of static shared
// memory: not P = 4 at N = 4096.
constexpr bool whole_fits(int log_n, int p) {
  return p * ((1 << log_n) + (1 << log_n) / 32) * 4 <= 48 * 1024;
}

template <int LOGN, int P>
struct WholeGeometry {
  static constexpr int n = 1 << LOGN;
  static constexpr int threads = n / R;
  static constexpr int padded = n + n / 32;  // one pad word per 32 (as in the row kernel)
  static constexpr bool fits = whole_fits(LOGN, P);
};

// LIFT (forward only, jax_fhe_ntt_forward_lift): src holds int32 small signed values [..., N]
// without the limb axis; every limb's block lifts them to residues as it loads them.
template <int LOGN, int P, bool INVERSE, bool LAZY, bool LIFT = false>
__global__ void __launch_bounds__(WholeGeometry<LOGN, P>::threads)
    ntt_whole_kernel(const uint32_t* src, uint32_t* dst,  // may alias (in place; not with LIFT)
                     Tables t) {
  static_assert(!(LIFT && INVERSE), "the lift is a forward-transform prologue");
  using G = WholeGeometry<LOGN, P>;
  __shared__ uint32_t smem[P * G::padded];
  const int64_t poly = t.poly0<P>();
  const int tab = t.rows[t.limb()];
  const uint32_t q = t.moduli[tab];
  const int64_t stride = t.limbs * int64_t{G::n};  // between the block's P polynomials
  const uint32_t* tw = t.tw + tab * int64_t{G::n};
  const uint32_t* tws = t.tw_shoup + tab * int64_t{G::n};
  const uint32_t* s = src + poly * G::n;
  const int32_t* xi = reinterpret_cast<const int32_t*>(src) + t.entry0<P>(blockIdx.y) * G::n;
  uint32_t* d = dst + poly * G::n;
  auto lift = [&](int32_t v) { return static_cast<uint32_t>(v) + (v < 0 ? q : 0u); };
  uint32_t scale = 0, scale_s = 0;
  if (INVERSE) {
    scale = t.scale[tab];
    scale_s = t.scale_shoup[tab];
  }
  auto finish = [&](uint32_t v) {
    if (INVERSE) return mul_shoup(v, scale, scale_s, q);
    if (LAZY) v = csub(csub(v, 2 * q), q);
    return v;
  };
  run_rounds<3, LOGN, P, INVERSE, LAZY, true>(
      static_cast<int>(threadIdx.x), 1u, tw, tws, q, smem,
      [&](int p, int u, int) {
        if constexpr (LIFT) return lift(xi[p * G::n + u]);
        else return s[p * stride + u];
      },
      [&](int p, int u, uint32_t v, int) { d[p * stride + u] = finish(v); },
      [](int p, int u) { return p * G::padded + u + (u >> 5); },
      [&](int p, int u, int) {
        if constexpr (LIFT) {
          const int4 v = *reinterpret_cast<const int4*>(xi + p * G::n + u);
          return make_uint4(lift(v.x), lift(v.y), lift(v.z), lift(v.w));
        } else {
          return *reinterpret_cast<const uint4*>(s + p * stride + u);
        }
      },
      [&](int p, int u, uint4 v, int) {
        *reinterpret_cast<uint4*>(d + p * stride + u) =
            make_uint4(finish(v.x), finish(v.y), finish(v.z), finish(v.w));
      },
      NoHook{});
}

// P for the one-block kernel: the inverse takes the largest P in {4, 2, 1} whose tiles fit
// (log_n <= kMaxWholeLog); the forward transform (plain and lifted) takes P = 1. Measured on an
// H100 at N = 4096, L = 3, 20480 polynomials: forward P = 2 2385 us (Nsight Compute: L2 busy
// 88%, DRAM 25%, 7x the output's sectors through L2), P = 1 1074 us; inverse P = 2 877 us,
// P = 1 1109 us.
inline int whole_max_p(int log_n, bool inverse) {
  if (!inverse) return 1;
  int p = 4;
  while (p > 1 && !whole_fits(log_n, p)) p /= 2;
  return p;
}

// Returns false where the one-block kernel does not apply (the caller runs the two phases).
template <int LOGN, int P, bool INVERSE, bool LAZY, bool LIFT>
bool launch_whole_n(const uint32_t* src, uint32_t* dst, int64_t groups, const Tables& t,
                    cudaStream_t stream) {
  if constexpr (WholeGeometry<LOGN, P>::fits && !(LIFT && (INVERSE || !LAZY))) {
    const dim3 grid(1, static_cast<unsigned>(groups));
    ntt_whole_kernel<LOGN, P, INVERSE, LAZY, LIFT>
        <<<grid, WholeGeometry<LOGN, P>::threads, 0, stream>>>(src, dst, t);
    return true;
  }
  return false;
}

template <int P, bool INVERSE, bool LAZY, bool LIFT = false>
bool launch_whole(int log_n, const uint32_t* src, uint32_t* dst, int64_t groups, const Tables& t,
                  cudaStream_t stream) {
  switch (log_n) {
    case 10: return launch_whole_n<10, P, INVERSE, LAZY, LIFT>(src, dst, groups, t, stream);
    case 11: return launch_whole_n<11, P, INVERSE, LAZY, LIFT>(src, dst, groups, t, stream);
    case 12: return launch_whole_n<12, P, INVERSE, LAZY, LIFT>(src, dst, groups, t, stream);
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Streamed two-phase NTT (N = 2^16, primes below 2^30), which runs the cluster kernel's tail
// (ntt_stream_tail). One persistent launch takes tiles from a work queue in the order
//     A(0), A(1), B(0), A(2), B(1), ..., A(C-1), B(C-2), B(C-1)
// where A(c) / B(c) are the first / second phase's tiles of chunk c (a few MB of polynomials, so
// that the intermediate of two chunks sits in L2 and B reads it from there) and a B tile of chunk
// c first waits until all of chunk c's A tiles have finished (a counter per chunk). A tiles never
// wait, and every A tile of chunk c is taken from the queue before any B tile of chunk c, by a
// block that is running, so the waits end. One launch: no tail between the phases or chunks.
// The B phase loads through L2 only (ld.global.cg: other SMs wrote those lines in this launch).
// State lives in a static device array (zero when the module loads): the queue counter, a count
// of the blocks that have left, and a counter per chunk. The last block to leave a launch sets
// its entries back to zero, so no memset precedes a launch (1-2 us less per cluster-kernel launch
// at L = 48, batch 16, H100).
// So launches must not run concurrently on several streams of a device (XLA runs a device's
// computations, custom calls included, on its compute stream).
constexpr int kStreamMaxChunks = 4096;
__device__ unsigned int g_ntt_stream_state[2 + kStreamMaxChunks];
enum StreamState { kQueue = 0, kLeft = 1, kChunk0 = 2 };

struct StreamPlan {
  int64_t groups;      // P-polynomial groups in the launch
  int chunk_groups;    // groups per chunk
  int chunks;
  int seg;             // queue items per segment: chunk_groups x max(tiles per group of A, B)
  // group g is the launch's limb-major items item0 + P g .. item0 + P g + P - 1 (item =
  // limb * batch + entry; item0 and batch are multiples of P, so a group is P entries of one
  // limb). (The kernel also takes item0 < 0, groups as Tables lays them out, from when it ran
  // whole transforms; every launch is now a tail, but the branch stays so that the kernel's
  // SASS is the measured one.)
  int64_t item0 = -1;
  int64_t batch = 0;
};

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

template <int K1, int K2, int P, bool INVERSE, bool LAZY>
struct StreamGeometry {
  static constexpr int kCols = 8;  // 256 threads, as the rows tile
  static constexpr int threads = ColsGeometry<K1, P, kCols>::threads;
  static_assert(threads == RowsGeometry<K2>::threads, "both phases run with one block size");
  static constexpr int cols_tiles = (1 << K2) / kCols;  // per group
  static constexpr int rows_tiles = (1 << K1) / RowsGeometry<K2>::rows_per_block;
  static constexpr int tiles_a = INVERSE ? rows_tiles : cols_tiles;
  static constexpr int tiles_b = INVERSE ? cols_tiles : rows_tiles;
  static constexpr int cw = ColsGeometry<K1, P, kCols>::smem_words;
  static constexpr int rw = RowsGeometry<K2>::template smem_words<P>;
  static constexpr int smem_words = cw > rw ? cw : rw;
};

// The launch is dependent on the cluster kernel (ntt_stream_tail); each block waits for it before
// exiting, so that later work on the stream follows both.
template <int K1, int K2, int P, bool INVERSE, bool LAZY, int MINB>
__global__ void __launch_bounds__((StreamGeometry<K1, K2, P, INVERSE, LAZY>::threads), MINB)
    ntt_stream_kernel(const uint32_t* src, uint32_t* dst, Tables t, StreamPlan plan,
                      unsigned* state) {
  using G = StreamGeometry<K1, K2, P, INVERSE, LAZY>;
  __shared__ uint32_t smem[G::smem_words];
  __shared__ unsigned item_s;
  const int64_t total = 2 * static_cast<int64_t>(plan.chunks) * plan.seg;
  for (;;) {
    __syncthreads();  // the previous tile is done with smem and item_s
    if (threadIdx.x == 0) item_s = atomicAdd(&state[kQueue], 1u);
    __syncthreads();
    const int64_t item = item_s;
    if (item >= total) {
      // every block takes queue items until one is past the end, so the last to get here knows
      // that no block reads the state any more: it resets it for the next launch
      __syncthreads();  // (item_s read by every thread)
      if (threadIdx.x == 0) {
        __threadfence();  // this thread's chunk counts (fire-and-forget) land before it leaves
        item_s = atomicAdd(&state[kLeft], 1u) + 1 == gridDim.x;
      }
      __syncthreads();
      if (item_s) {
        for (int c = threadIdx.x; c < plan.chunks; c += blockDim.x) state[kChunk0 + c] = 0;
        if (threadIdx.x == 0) state[kQueue] = 0, state[kLeft] = 0;
      }
      // the tail waits last, so that nothing but its exit follows the cluster kernel's end (the
      // state is the tail's own: the cluster kernel never reads it)
      if (plan.item0 >= 0) wait_for_producer();
      return;
    }
    const int64_t segment = item / plan.seg;
    const int idx = static_cast<int>(item % plan.seg);
    bool second;
    int chunk;
    if (segment == 0) {
      second = false, chunk = 0;
    } else if (segment == 2 * static_cast<int64_t>(plan.chunks) - 1) {
      second = true, chunk = plan.chunks - 1;
    } else if (segment & 1) {
      second = false, chunk = static_cast<int>((segment + 1) / 2);
    } else {
      second = true, chunk = static_cast<int>(segment / 2 - 1);
    }
    const int64_t g0 = static_cast<int64_t>(chunk) * plan.chunk_groups;
    const int64_t left = plan.groups - g0;
    const int ng = static_cast<int>(left < plan.chunk_groups ? left : plan.chunk_groups);
    const int tiles = second ? G::tiles_b : G::tiles_a;
    const int gi = idx / tiles, tile = idx % tiles;
    if (gi >= ng) continue;  // the segment is sized for the larger tile count
    unsigned group = static_cast<unsigned>(g0 + gi);
    if (plan.item0 >= 0) {  // the tail's limb-major items, as a one-limb launch
      const int64_t it = plan.item0 + P * static_cast<int64_t>(group);
      t.limb0 = static_cast<int>(it / plan.batch), t.limb_count = 1, t.batch0 = it % plan.batch;
      group = 0;
    }
    if (!second) {
      if (INVERSE)
        rows_tile<K2, P, true, LAZY, false>(src, dst, t, tile, group, smem);
      else
        columns_tile<K1, P, false, LAZY, false, G::kCols>(src, dst, t, tile, group, smem);
      __threadfence();  // this thread's stores, before the block's count below
      __syncthreads();
      if (threadIdx.x == 0) atomicAdd(&state[kChunk0 + chunk], 1u);
    } else {
      if (threadIdx.x == 0) {
        const unsigned need = static_cast<unsigned>(ng) * G::tiles_a;
        // the wait ends by construction (see above); a watchdog turns a broken invariant into
        // a launch error (after about 7 s) instead of a hung GPU
        for (uint32_t spins = 0; load_acquire(&state[kChunk0 + chunk]) < need; ++spins) {
          if (spins == (1u << 26)) __trap();
          __nanosleep(100);
        }
      }
      __syncthreads();
      if (INVERSE)
        columns_tile<K1, P, true, LAZY, true, G::kCols>(dst, dst, t, tile, group, smem);
      else
        rows_tile<K2, P, false, LAZY, true>(dst, dst, t, tile, group, smem);
    }
  }
}

// The streamed launch for N = 2^16 (K1 = K2 = 8, P = 4, lazy) in two steps: its plan
// (stream_setup; false where it does not apply), then the launch (stream_launch).
struct StreamLaunch {
  StreamPlan plan;
  unsigned* state = nullptr;
  int64_t per_sm = 0;  // resident blocks per SM
};

template <bool INVERSE, int MINB>
bool stream_setup(int log_n, int64_t groups, StreamLaunch* out) {
  constexpr int P = 4;
  constexpr bool LAZY = true;
  if (log_n != 16 || groups <= 0) return false;
  constexpr int K1 = 8, K2 = 8;
  using G = StreamGeometry<K1, K2, P, INVERSE, LAZY>;
  auto kernel = ntt_stream_kernel<K1, K2, P, INVERSE, LAZY, MINB>;
  const int64_t group_bytes = int64_t{P} * (int64_t{1} << log_n) * 4;
  StreamPlan& plan = out->plan;
  plan.groups = groups;
  int64_t cg = std::max<int64_t>(1, kStreamChunkBytes / group_bytes);
  cg = std::max<int64_t>(cg, (groups + kStreamMaxChunks - 1) / kStreamMaxChunks);
  plan.chunk_groups = static_cast<int>(std::min<int64_t>(cg, groups));
  plan.chunks = static_cast<int>((groups + plan.chunk_groups - 1) / plan.chunk_groups);
  plan.seg = plan.chunk_groups * std::max(G::tiles_a, G::tiles_b);
  // both are runtime queries: once per device
  out->per_sm = per_device([&](int) -> int64_t {
    int v = 0;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, kernel, G::threads, 0) == cudaSuccess ? v : 0;
  });
  out->state = reinterpret_cast<unsigned*>(per_device([](int) -> int64_t {
    void* p = nullptr;
    return cudaGetSymbolAddress(&p, g_ntt_stream_state) == cudaSuccess
               ? static_cast<int64_t>(reinterpret_cast<uintptr_t>(p))
               : 0;
  }));
  return out->per_sm >= 1 && out->state != nullptr;
}

// `blocks` of them, as dependent on the cluster kernel launched before
template <bool INVERSE, int MINB>
void stream_launch(const StreamLaunch& l, const uint32_t* src, uint32_t* dst, const Tables& t,
                   int64_t blocks, cudaStream_t stream) {
  constexpr int K1 = 8, K2 = 8, P = 4;
  using G = StreamGeometry<K1, K2, P, INVERSE, true>;
  const int64_t items = 2 * static_cast<int64_t>(l.plan.chunks) * l.plan.seg;
  blocks = std::min<int64_t>(items, blocks);
  launch_kernel(true, ntt_stream_kernel<K1, K2, P, INVERSE, true, MINB>,
                dim3(static_cast<unsigned>(blocks)), dim3(G::threads), 0, stream, src, dst, t, l.plan,
                l.state);
}

// `groups`: number of P-polynomial groups in the launch (grid.y).
template <int K1, int P, bool INVERSE, bool LAZY, int MINB>
void launch_columns(const uint32_t* src, uint32_t* dst, int64_t groups, const Tables& t,
                    cudaStream_t stream) {
  using G = ColsGeometry<K1, P>;
  constexpr int kCols = G::kCols;
  constexpr size_t smem_bytes = sizeof(uint32_t) * G::smem_words;
  auto kernel = ntt_columns_kernel<K1, P, INVERSE, LAZY, MINB>;
  if constexpr (smem_bytes > 48 * 1024) {  // opt in once per device
    per_device([&](int) -> int64_t {
      return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem_bytes)) == cudaSuccess;
    });
  }
  const int n2 = (1 << t.log_n) >> K1;
  dim3 grid(n2 / kCols, static_cast<unsigned>(groups));
  // the inverse transform's second phase: launched as dependent on the first, groups reversed
  Tables tc = t;
  tc.reversed_groups = INVERSE ? static_cast<unsigned>(groups) : 0u;
  launch_kernel(INVERSE, kernel, grid, dim3(G::threads), smem_bytes, stream, src, dst, tc);
}

template <int K2, int P, bool INVERSE, bool LAZY, int MINB>
void launch_rows(const uint32_t* src, uint32_t* dst, int64_t groups, const Tables& t,
                 cudaStream_t stream) {
  using G = RowsGeometry<K2>;
  const int n1 = (1 << t.log_n) >> K2;
  dim3 grid(n1 / G::rows_per_block, static_cast<unsigned>(groups));
  // the forward transform's second phase: launched as dependent on the first, groups reversed
  Tables tr = t;
  tr.reversed_groups = INVERSE ? 0u : static_cast<unsigned>(groups);
  launch_kernel(!INVERSE, ntt_rows_kernel<K2, P, INVERSE, LAZY, MINB>, grid, dim3(G::threads), 0,
                stream, src, dst, tr);
}

template <int K, int P, bool INVERSE, bool LAZY, int MINB>
void launch_phase_k(bool columns, const uint32_t* src, uint32_t* dst, int64_t groups,
                    const Tables& t, cudaStream_t stream) {
  if (columns)
    launch_columns<K, P, INVERSE, LAZY, MINB>(src, dst, groups, t, stream);
  else
    launch_rows<K, P, INVERSE, LAZY, MINB>(src, dst, groups, t, stream);
}

template <int P, bool INVERSE, bool LAZY>
void launch_phase(bool columns, int k, const uint32_t* src, uint32_t* dst, int64_t groups,
                  const Tables& t, cudaStream_t stream) {
  switch (k) {
    case 5: launch_phase_k<5, P, INVERSE, LAZY, 0>(columns, src, dst, groups, t, stream); break;
    case 6: launch_phase_k<6, P, INVERSE, LAZY, 0>(columns, src, dst, groups, t, stream); break;
    case 7: launch_phase_k<7, P, INVERSE, LAZY, 0>(columns, src, dst, groups, t, stream); break;
    case 8:  // (N = 2^15, 2^16: the register budget by kernel, tuning.h)
      if (columns)
        launch_columns<8, P, INVERSE, LAZY, ntt_min_blocks(true, P, INVERSE)>(src, dst, groups, t, stream);
      else
        launch_rows<8, P, INVERSE, LAZY, ntt_min_blocks(false, P, INVERSE)>(src, dst, groups, t, stream);
      break;
  }
}

// Polynomials per launch: grid.y holds the launch's groups, at most 65535.
constexpr int64_t kMaxLaunchPolys = 65535;

// LIFT: the lifted forward transform through the one-block kernel only (the caller checks that
// it applies: lazy, N <= 2^kMaxWholeLog, P = 1).
template <int P, bool INVERSE, bool LAZY, bool LIFT = false>
void run_ntt_p(cudaStream_t stream, const PolyShape& s, const uint32_t* src, uint32_t* dst,
               Tables t) {
  const int k1 = s.log_n / 2, k2 = s.log_n - k1;
  const int64_t batch = s.polys / s.limbs;  // a multiple of P
  // launches of (limb window x batch window), limb-major, each at most kMaxLaunchPolys
  // polynomials; the batch window is a multiple of P
  const int64_t budget = kMaxLaunchPolys;
  const int64_t limb_step = std::max<int64_t>(1, std::min<int64_t>(s.limbs, budget / batch));
  int64_t batch_step = std::min<int64_t>(batch, budget / limb_step);
  batch_step = std::max<int64_t>(P, batch_step / P * P);
  for (int64_t l0 = 0; l0 < s.limbs; l0 += limb_step) {
    for (int64_t b0 = 0; b0 < batch; b0 += batch_step) {
      t.limb0 = static_cast<int>(l0);
      t.limb_count = static_cast<int>(std::min(limb_step, s.limbs - l0));
      t.batch0 = b0;
      const int64_t groups = std::min(batch_step, batch - b0) / P * t.limb_count;
      if (LIFT) {
        launch_whole<P, INVERSE, LAZY, LIFT>(s.log_n, src, dst, groups, t, stream);
      } else if (s.log_n <= kMaxWholeLog &&
          launch_whole<P, INVERSE, LAZY>(s.log_n, src, dst, groups, t, stream)) {
        // one block per polynomial group: done
      } else if (!INVERSE) {
        launch_phase<P, false, LAZY>(true, k1, src, dst, groups, t, stream);
        launch_phase<P, false, LAZY>(false, k2, dst, dst, groups, t, stream);
      } else {
        launch_phase<P, true, LAZY>(false, k2, src, dst, groups, t, stream);
        launch_phase<P, true, LAZY>(true, k1, dst, dst, groups, t, stream);
      }
    }
  }
}

// The forward transform with its rows phase over row groups: the columns phase as run_ntt_p
// launches it (P by the batch), then one block per (tile, batch entry, group). Where a batch
// already gives P = 4 the groups add nothing; false where they do not apply (the caller runs the
// plain path): other sizes than N = 2^16, and launches too large for one grid.
template <bool LAZY>
bool run_ntt_gathered(cudaStream_t stream, const PolyShape& s, const uint32_t* src, uint32_t* dst,
                      Tables t, const RowGroups& g) {
  constexpr int K1 = 8, K2 = 8;
  const int64_t batch = s.polys / s.limbs;
  if (s.log_n != K1 + K2 || s.polys > kMaxLaunchPolys || batch % 4 == 0 || batch * g.count > 65535)
    return false;
  using G = RowsGeometry<K2>;
  t.limb0 = 0;
  t.limb_count = static_cast<int>(s.limbs);
  t.batch0 = 0;
  if (batch % 2 == 0)
    launch_phase<2, false, LAZY>(true, K1, src, dst, batch / 2 * s.limbs, t, stream);
  else
    launch_phase<1, false, LAZY>(true, K1, src, dst, batch * s.limbs, t, stream);
  const dim3 grid((1 << K1) / G::rows_per_block, static_cast<unsigned>(batch * g.count));
  constexpr int kMinBlocks = ntt_min_blocks(false, kRowGroupSize, false, true);
  launch_kernel(true, ntt_rows_gathered_kernel<K2, LAZY, kMinBlocks>, grid, dim3(G::threads), 0, stream,
                dst, dst, t, g);
  return true;
}

// row_groups: the forward transform's gathered row groups, or null.
template <bool INVERSE, bool LAZY>
ffi::Error run_ntt(cudaStream_t stream, const PolyShape& s, const uint32_t* src, uint32_t* dst,
                   Tables t, const RowGroups* row_groups = nullptr) {
  if (run_ntt_cluster(stream, s, src, dst, t, INVERSE, LAZY)) {
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
      return ffi::Error::Internal(std::string("ntt kernel launch failed: ") + cudaGetErrorString(err));
    return ffi::Error::Success();
  }
  const int64_t batch = s.polys / s.limbs;
  // P: the largest in {4, 2, 1} that divides the batch, and for the one-block kernel whole_max_p's
  // (N = 4096: 1 forward, 2 inverse) rather than falling back to the two phases at P = 4
  const int max_p = s.log_n <= kMaxWholeLog ? whole_max_p(s.log_n, INVERSE) : 4;
  if (!INVERSE && row_groups != nullptr && run_ntt_gathered<LAZY>(stream, s, src, dst, t, *row_groups)) {
    // rows phase over row groups: done
  } else if (max_p >= 4 && batch % 4 == 0)
    run_ntt_p<4, INVERSE, LAZY>(stream, s, src, dst, t);
  else if (max_p >= 2 && batch % 2 == 0)
    run_ntt_p<2, INVERSE, LAZY>(stream, s, src, dst, t);
  else
    run_ntt_p<1, INVERSE, LAZY>(stream, s, src, dst, t);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return ffi::Error::Internal(std::string("ntt kernel launch failed: ") + cudaGetErrorString(err));
  return ffi::Error::Success();
}

ffi::Error NttForwardCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                              ffi::Buffer<ffi::S32> rows, ffi::Buffer<ffi::U32> moduli,
                              ffi::Buffer<ffi::U32> tw, ffi::Buffer<ffi::U32> tw_shoup,
                              ffi::ResultBuffer<ffi::U32> y, bool lazy,
                              ffi::Span<const int32_t> row_groups) {
  NttCall c;
  if (auto e = decode_ntt_forward_args(x, rows, moduli, tw, tw_shoup, y->dimensions(), row_groups,
                                       nullptr, &c);
      e.failure())
    return e;
  const PolyShape& s = c.s;
  if (s.polys == 0) return ffi::Error::Success();
  Tables t{rows.typed_data(), moduli.typed_data(), tw.typed_data(), tw_shoup.typed_data(),
           nullptr, nullptr, static_cast<int>(s.limbs), s.log_n, 0, 1, 0};
  const int64_t group_count = static_cast<int64_t>(row_groups.size()) / kRowGroupSize;
  RowGroups g;
  const RowGroups* gp = nullptr;
  if (group_count > 0 && group_count <= kMaxRowGroups && s.limbs <= INT16_MAX) {
    g.count = static_cast<int>(group_count);
    for (int64_t i = 0; i < group_count * kRowGroupSize; ++i)
      g.limb[i / kRowGroupSize][i % kRowGroupSize] = static_cast<int16_t>(row_groups[i]);
    gp = &g;
  }
  return lazy ? run_ntt<false, true>(stream, s, x.typed_data(), y->typed_data(), t, gp)
              : run_ntt<false, false>(stream, s, x.typed_data(), y->typed_data(), t, gp);
}

ffi::Error NttInverseCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                              ffi::Buffer<ffi::S32> rows, ffi::Buffer<ffi::U32> moduli,
                              ffi::Buffer<ffi::U32> itw, ffi::Buffer<ffi::U32> itw_shoup,
                              ffi::Buffer<ffi::U32> n_inv, ffi::Buffer<ffi::U32> n_inv_shoup,
                              ffi::ResultBuffer<ffi::U32> y, bool lazy) {
  NttCall c;
  if (auto e = decode_ntt_inverse_args(x, rows, moduli, itw, itw_shoup, n_inv, n_inv_shoup,
                                       y->dimensions(), nullptr, &c);
      e.failure())
    return e;
  const PolyShape& s = c.s;
  if (s.polys == 0) return ffi::Error::Success();
  Tables t{rows.typed_data(),  moduli.typed_data(),      itw.typed_data(),
           itw_shoup.typed_data(), n_inv.typed_data(), n_inv_shoup.typed_data(),
           static_cast<int>(s.limbs), s.log_n, 0, 1, 0};
  return lazy ? run_ntt<true, true>(stream, s, x.typed_data(), y->typed_data(), t)
              : run_ntt<true, false>(stream, s, x.typed_data(), y->typed_data(), t);
}

// Residues of small signed values for every limb: y[b, l, j] = x[b, j] mod q_rows[l] (the lifted
// NTT's first pass where the one-block kernel does not apply).
__global__ void lift_kernel(const int32_t* x, uint32_t* y, const int32_t* rows,
                            const uint32_t* moduli, int limbs, int log_n, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total; i += step) {
    const int64_t p = i >> log_n, j = i & ((int64_t{1} << log_n) - 1);
    const uint32_t q = moduli[rows[p % limbs]];
    const int32_t v = x[((p / limbs) << log_n) + j];
    y[i] = static_cast<uint32_t>(v) + (v < 0 ? q : 0u);
  }
}

// The lifted forward NTT (semantics in ntt_args.h): fused into the one-block kernel's loads for
// N <= 2^kMaxWholeLog with primes below 2^30 (the int32 input is read once per limb, the residues
// are never written before the transform), else a lift pass and the forward NTT in place. The
// range |x| < q is the caller's contract here (the CPU handler checks it).
ffi::Error NttForwardLiftCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::S32> x,
                                  ffi::Buffer<ffi::S32> rows, ffi::Buffer<ffi::U32> moduli,
                                  ffi::Buffer<ffi::U32> tw, ffi::Buffer<ffi::U32> tw_shoup,
                                  ffi::ResultBuffer<ffi::U32> y, bool lazy) {
  NttCall c;
  if (auto e = decode_ntt_lift_args(x, rows, moduli, tw, tw_shoup, y->dimensions(), nullptr, &c);
      e.failure())
    return e;
  const PolyShape& s = c.s;
  if (s.polys == 0) return ffi::Error::Success();
  Tables t{rows.typed_data(), moduli.typed_data(), tw.typed_data(), tw_shoup.typed_data(),
           nullptr, nullptr, static_cast<int>(s.limbs), s.log_n, 0, 1, 0};
  const int32_t* xi = x.typed_data();
  uint32_t* dst = y->typed_data();
  if (lazy && s.log_n <= kMaxWholeLog) {
    // one polynomial per block, as whole_max_p gives every forward transform
    run_ntt_p<1, false, true, true>(stream, s, reinterpret_cast<const uint32_t*>(xi), dst, t);
  } else {
    const int64_t total = s.polys * s.n;
    const int64_t blocks = std::min<int64_t>((total + 255) / 256, int64_t{sm_count()} * 16);
    lift_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
        xi, dst, rows.typed_data(), moduli.typed_data(), static_cast<int>(s.limbs), s.log_n, total);
    return lazy ? run_ntt<false, true>(stream, s, dst, dst, t)
                : run_ntt<false, false>(stream, s, dst, dst, t);
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return ffi::Error::Internal(std::string("ntt_lift kernel launch failed: ") + cudaGetErrorString(err));
  return ffi::Error::Success();
}

}  // namespace

namespace ntt_cuda {

namespace {
template <bool INVERSE, bool LAZY>
void launch_ntt_phase_p(bool columns, int k, int p, const uint32_t* src, uint32_t* dst,
                        int64_t groups, const Tables& t, cudaStream_t stream) {
  auto launch = p == 4 ? launch_phase<4, INVERSE, LAZY>
              : p == 2 ? launch_phase<2, INVERSE, LAZY>
                       : launch_phase<1, INVERSE, LAZY>;
  launch(columns, k, src, dst, groups, t, stream);
}
}  // namespace

namespace {
template <bool INVERSE, int MINB>
bool stream_tail(bool launch, const uint32_t* src, uint32_t* dst, int64_t item0, int64_t items,
                 int64_t batch, const Tables& t, int64_t free_sms, cudaStream_t stream) {
  StreamLaunch l;
  if (item0 % 4 != 0 || items % 4 != 0 || batch % 4 != 0 ||
      !stream_setup<INVERSE, MINB>(t.log_n, items / 4, &l))
    return false;
  l.plan.item0 = item0, l.plan.batch = batch;
  if (!launch) return true;
  stream_launch<INVERSE, MINB>(l, src, dst, t, free_sms * l.per_sm, stream);
  return true;
}
}  // namespace

// (kTailBlocksPerSm resident blocks per SM, tuning.h)
bool ntt_stream_tail(bool inverse, bool launch, const uint32_t* src, uint32_t* dst, int64_t item0,
                     int64_t items, int64_t batch, const Tables& t, int64_t free_sms,
                     cudaStream_t stream) {
  return inverse ? stream_tail<true, kTailBlocksPerSm>(launch, src, dst, item0, items, batch, t, free_sms, stream)
                 : stream_tail<false, kTailBlocksPerSm>(launch, src, dst, item0, items, batch, t, free_sms, stream);
}

void launch_ntt_phase(bool inverse, bool columns, int p, bool lazy, const uint32_t* src,
                      uint32_t* dst, int64_t groups, const Tables& t, cudaStream_t stream) {
  const int k = columns ? t.log_n / 2 : t.log_n - t.log_n / 2;
  auto launch = inverse ? (lazy ? launch_ntt_phase_p<true, true> : launch_ntt_phase_p<true, false>)
                        : (lazy ? launch_ntt_phase_p<false, true> : launch_ntt_phase_p<false, false>);
  launch(columns, k, p, src, dst, groups, t, stream);
}

}  // namespace ntt_cuda

XLA_FFI_DEFINE_HANDLER_SYMBOL(NttForwardLiftCuda, NttForwardLiftCudaImpl,
                              bind_ntt_lift(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(NttForwardCuda, NttForwardCudaImpl,
                              bind_ntt_forward(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(NttInverseCuda, NttInverseCudaImpl,
                              bind_ntt_inverse(ffi::Ffi::Bind().Ctx<ffi::PlatformStream<cudaStream_t>>()),
                              {ffi::Traits::kCmdBufferCompatible});

}  // namespace jax_fhe
