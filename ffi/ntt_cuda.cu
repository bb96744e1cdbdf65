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
// where u is the local index and W = 1 for a column, W = n1 + row for a row.
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
// Memory traffic: the two phases move every byte through HBM twice unless the phase-1 output
// is still in L2 when phase 2 reads it. Three ways around it, by size:
//   * N <= 2^12 (PIR's ring): one block runs the whole transform (ntt_whole_kernel, default);
//   * N = 2^16: the streamed kernel (ntt_stream_kernel, opt-in JAX_FHE_NTT_STREAM=1) runs both
//     phases in one persistent launch, chunk by chunk, so phase 2 reads from L2 (it also runs
//     the cluster kernel's tail, on the SMs the clusters leave idle: ntt_stream_tail);
//   * any size: the handler can launch the phases per L2-sized chunk (chunk_polys; measured
//     slower than one launch per phase, below).
// Plus the sm_90 single-pass cluster kernel (ntt_cluster_cuda.cu; the default for launches of
// at least 128 polynomials of N = 2^16).
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
  __shared__ uint32_t smem[RowsGeometry<K2>::template smem_words<P>];
  allow_dependents();
  wait_for_producer();
  rows_tile<K2, P, INVERSE, LAZY, false>(src, dst, t, blockIdx.x, t.group_of(blockIdx.y), smem);
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

// Whole transform in one block, for N <= 2^kMaxWholeLog (the PIR ring, N = 4096, and the small
// test sizes): N / 8 threads hold a polynomial (P of them, as above) and run all log N stages
// as radix-8 rounds with shared-memory exchanges, so each coefficient crosses HBM once each way
// and there is one launch instead of two. The twiddle index of a full transform is the column
// phase's (W = 1, K = log N). Forward output is reduced from [0, 4q); the inverse scales by N^-1.
constexpr int kMaxWholeLog = 12;

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
// Streamed two-phase NTT (opt-in, JAX_FHE_NTT_STREAM=1; N = 2^16, primes below 2^30). The two
// phases bound the default kernels by HBM: every coefficient crosses it twice each way. Here one
// persistent launch takes tiles from a work queue in the order
//     A(0), A(1), B(0), A(2), B(1), ..., A(C-1), B(C-2), B(C-1)
// where A(c) / B(c) are the first / second phase's tiles of chunk c (a few MB of polynomials, so
// that the intermediate of two chunks sits in L2 and B reads it from there) and a B tile of chunk
// c first waits until all of chunk c's A tiles have finished (a counter per chunk). A tiles never
// wait, and every A tile of chunk c is taken from the queue before any B tile of chunk c, by a
// block that is running, so the waits end. One launch: no tail between the phases or chunks.
// The B phase loads through L2 only (ld.global.cg: other SMs wrote those lines in this launch).
// State lives in a static device array (zero when the module loads): the queue counter, a count
// of the blocks that have left, and a counter per chunk. The last block to leave a launch sets
// its entries back to zero, so no memset precedes a launch (one operation less per
// cluster-kernel launch, whose tail this kernel runs: 1-2 us at L = 48, batch 16, session 23).
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
  // >= 0: as the cluster kernel's tail, group g is the launch's limb-major items
  // item0 + P g .. item0 + P g + P - 1 (item = limb * batch + entry; item0 and batch are
  // multiples of P, so a group is P entries of one limb); < 0: groups as Tables lays them out
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

// As the cluster kernel's tail (plan.item0 >= 0: ntt_stream_tail) the launch is dependent on
// that kernel; each block waits for it before exiting, so that later work on the stream follows
// both.
template <int K1, int K2, int P, bool INVERSE, bool LAZY, int MINB = 3>
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

bool stream_enabled() {
  static const bool v = tuning_int("JAX_FHE_NTT_STREAM", 0) == 1;
  return v;
}

int64_t stream_chunk_bytes() {
  static const int64_t v = std::max<int64_t>(1, tuning_int("JAX_FHE_NTT_STREAM_CHUNK_BYTES", int64_t{12} << 20));
  return v;
}

// The streamed launch for N = 2^16 (K1 = K2 = 8, P = 4, lazy) in two steps: its plan
// (stream_setup; false where it does not apply), then the launch (stream_launch; `blocks` <= 0:
// as many as fit the device; plan.item0 >= 0: as the cluster kernel's tail).
struct StreamLaunch {
  StreamPlan plan;
  unsigned* state = nullptr;
  int64_t per_sm = 0;  // resident blocks per SM
};

template <bool INVERSE, int MINB = 3>
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
  int64_t cg = std::max<int64_t>(1, stream_chunk_bytes() / group_bytes);
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

template <bool INVERSE, int MINB = 3>
void stream_launch(const StreamLaunch& l, const uint32_t* src, uint32_t* dst, const Tables& t,
                   int64_t blocks, cudaStream_t stream) {
  constexpr int K1 = 8, K2 = 8, P = 4;
  using G = StreamGeometry<K1, K2, P, INVERSE, true>;
  const int64_t items = 2 * static_cast<int64_t>(l.plan.chunks) * l.plan.seg;
  if (blocks <= 0) blocks = l.per_sm * sm_count();
  blocks = std::min<int64_t>(items, blocks);
  // the tail (plan.item0 >= 0) is dependent on the cluster kernel launched before it
  launch_kernel(l.plan.item0 >= 0, ntt_stream_kernel<K1, K2, P, INVERSE, true, MINB>,
                dim3(static_cast<unsigned>(blocks)), dim3(G::threads), 0, stream, src, dst, t, l.plan,
                l.state);
}

template <bool INVERSE>
bool launch_stream_p4(int log_n, const uint32_t* src, uint32_t* dst, int64_t groups,
                      const Tables& t, cudaStream_t stream) {
  StreamLaunch l;
  if (!stream_setup<INVERSE>(log_n, groups, &l)) return false;
  stream_launch<INVERSE>(l, src, dst, t, 0, stream);
  return true;
}

template <int P, bool INVERSE, bool LAZY>
bool launch_stream(int log_n, const uint32_t* src, uint32_t* dst, int64_t groups,
                   const Tables& t, cudaStream_t stream) {
  // P = 4 only: there both phases' tiles have 256 threads (at P <= 2 the column tile has 512)
  if constexpr (P == 4 && LAZY) {
    return launch_stream_p4<INVERSE>(log_n, src, dst, groups, t, stream);
  }
  return false;
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

// Minimum resident blocks per SM asked of the compiler for the N = 2^16 phases
// (JAX_FHE_NTT_MIN_BLOCKS = 0, 2 or 3 for every kernel; default below). The hint sets the
// register budget (256 threads: none -> ptxas keeps 64 or fewer and interleaves the loads with
// the butterflies, 2 -> up to 128, 3 -> 85), which trades occupancy against how many of a thread's loads are in
// flight before the first butterfly. H100, L = 48: batch 1 forward / inverse 49.4 / 86.9 us with
// no hint, 43.4 / 46.4 with 2, 40.2 / 45.0 with 3; batch 16: 397 / 396, 400 / 400, 405 / 408
// (session 6; that batch-16 run was near the H100's HBM limit for two passes).
// Default (unset, or any other value), measured on an H200 at L = 48 (session 16, device us):
// - columns kernel at P = 4 (512 threads, 16 columns, 64 KB): 2 (64 registers). Batch 16:
//   forward 138.3 / inverse 139.9; with 3 (40 registers) 162.1 / 165.1, with none 160.3 / 151.2.
// - rows kernel at P = 4: none for the forward (64 registers, 4 blocks per SM), 3 for the
//   inverse (80 registers). Batch 16: forward 136.8-137.7 with none against 145.6-147.2 with 3
//   (they were equal, 148.4 / 148.7, before the second phase ran in reverse); inverse 133.1-135.0
//   with 3 against 137.3 with none; batch 4 forward 39.2 against 44.6. 3 against 2, batch 16:
//   303.1 against 323.8 us for the whole forward transform (with 8-column tiles then).
// - columns kernel at P = 2 (512 threads): none for the forward (32 registers, 4 blocks per SM),
//   3 for the inverse. Batch 16 (JAX_FHE_NTT_MAX_P=2): forward 135.5 against 157.7 with 2 and
//   150.1 with 3; inverse 181.2 with none, 147.3 with 3, 147.4 with 2. Batch 2: forward 21.9
//   against 22.6, inverse 24.4 with 3 against 25.0.
// - P = 1: 3 for the columns kernel (ModUp's NTT, 192 limbs: 44.1 us against 50.0-50.2 with 2;
//   its INTT 12.0 against 13.0), 2 for the rows kernels (51.6 with 3 against 50.7; 3 for every
//   kernel made one key switch's kernels 307 us against 291).
// - the gathered rows kernel: none (ModUp's 192 limbs, 4 runs over two builds: 38.3-38.9 us
//   against 41.2-41.8 with 3; session 15: 41.7 with 3 against 47.2 with 2, where ncu showed
//   occupancy 24%, issue slots 47% busy, long-scoreboard stalls first).
// - otherwise 2.
int ntt_min_blocks(bool columns, int p, bool inverse, bool gathered = false) {
  static const int64_t env = tuning_int("JAX_FHE_NTT_MIN_BLOCKS", -1);
  if (env == 0 || env == 2 || env == 3) return static_cast<int>(env);
  if (gathered) return 0;
  if (p == 4) return columns ? 2 : (inverse ? 3 : 0);
  if (p == 2) return columns ? (inverse ? 3 : 0) : 2;
  return columns ? 3 : 2;
}

template <int P, bool INVERSE, bool LAZY>
void launch_phase(bool columns, int k, const uint32_t* src, uint32_t* dst, int64_t groups,
                  const Tables& t, cudaStream_t stream) {
  switch (k) {
    case 5: launch_phase_k<5, P, INVERSE, LAZY, 0>(columns, src, dst, groups, t, stream); break;
    case 6: launch_phase_k<6, P, INVERSE, LAZY, 0>(columns, src, dst, groups, t, stream); break;
    case 7: launch_phase_k<7, P, INVERSE, LAZY, 0>(columns, src, dst, groups, t, stream); break;
    case 8:
      switch (ntt_min_blocks(columns, P, INVERSE)) {
        case 0: launch_phase_k<8, P, INVERSE, LAZY, 0>(columns, src, dst, groups, t, stream); break;
        case 3: launch_phase_k<8, P, INVERSE, LAZY, 3>(columns, src, dst, groups, t, stream); break;
        default: launch_phase_k<8, P, INVERSE, LAZY, 2>(columns, src, dst, groups, t, stream);
      }
      break;
  }
}

// Polynomials per chunk. Unchunked by default: with the current kernels, L2-sized chunks
// (which keep the phase-1 output in L2 for phase 2) measured slower than one launch per phase
// over everything (H100, L = 48, B = 16: 479 us at 12.5 MB chunks, 412 us unchunked), because
// the small launches leave the GPU partly idle between phases. JAX_FHE_NTT_CHUNK_BYTES sets a
// chunk size (for tuning).
int64_t chunk_polys(int64_t n) {
  static const int64_t chunk_bytes = tuning_int("JAX_FHE_NTT_CHUNK_BYTES", int64_t{1} << 40);
  int64_t c = std::max<int64_t>(1, chunk_bytes / (n * 4));
  return std::min<int64_t>(c, 65535);
}

// The one-block transform for N <= 2^12 (default); JAX_FHE_NTT_WHOLE=0 selects the two-phase
// kernels instead (for comparison and tests).
bool whole_enabled() {
  static const bool v = tuning_int("JAX_FHE_NTT_WHOLE", 1) != 0;
  return v;
}

// LIFT: the lifted forward transform through the one-block kernel only (the caller checks that
// it applies: lazy, N <= 2^kMaxWholeLog, P = 1).
template <int P, bool INVERSE, bool LAZY, bool LIFT = false>
void run_ntt_p(cudaStream_t stream, const PolyShape& s, const uint32_t* src, uint32_t* dst,
               Tables t) {
  const int k1 = s.log_n / 2, k2 = s.log_n - k1;
  const int64_t batch = s.polys / s.limbs;  // a multiple of P
  // chunks of (limb window x batch window), limb-major, each about chunk_polys() polynomials;
  // the batch window is a multiple of P
  const int64_t budget = chunk_polys(s.n);
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
      } else if (s.log_n <= kMaxWholeLog && whole_enabled() &&
          launch_whole<P, INVERSE, LAZY>(s.log_n, src, dst, groups, t, stream)) {
        // one block per polynomial group: done
      } else if (stream_enabled() && launch_stream<P, INVERSE, LAZY>(s.log_n, src, dst, groups, t, stream)) {
        // both phases in one persistent launch: done
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

// Gathered row groups for the forward rows phase (JAX_FHE_NTT_ROW_GROUPS=0 turns them off).
bool row_groups_enabled() {
  static const bool v = tuning_int("JAX_FHE_NTT_ROW_GROUPS", 1) != 0;
  return v;
}

// The forward transform with its rows phase over row groups: the columns phase as run_ntt_p
// launches it (P by the batch), then one block per (tile, batch entry, group). Where a batch
// already gives P = 4 the groups add nothing; false where they do not apply (the caller runs the
// plain path): other sizes than N = 2^16, the opt-in streamed and chunked launches, and P
// capped below 4 (JAX_FHE_NTT_MAX_P).
template <bool LAZY>
bool run_ntt_gathered(cudaStream_t stream, const PolyShape& s, const uint32_t* src, uint32_t* dst,
                      Tables t, const RowGroups& g, int max_p) {
  constexpr int K1 = 8, K2 = 8;
  const int64_t batch = s.polys / s.limbs;
  if (s.log_n != K1 + K2 || !row_groups_enabled() || stream_enabled() || chunk_polys(s.n) < s.polys ||
      max_p < 4 || batch % 4 == 0 || batch * g.count > 65535)
    return false;
  using G = RowsGeometry<K2>;
  t.limb0 = 0;
  t.limb_count = static_cast<int>(s.limbs);
  t.batch0 = 0;
  if (max_p >= 2 && batch % 2 == 0)
    launch_phase<2, false, LAZY>(true, K1, src, dst, batch / 2 * s.limbs, t, stream);
  else
    launch_phase<1, false, LAZY>(true, K1, src, dst, batch * s.limbs, t, stream);
  const dim3 grid((1 << K1) / G::rows_per_block, static_cast<unsigned>(batch * g.count));
  const int minb = ntt_min_blocks(false, kRowGroupSize, false, true);
  auto kernel = minb == 0   ? ntt_rows_gathered_kernel<K2, LAZY, 0>
                : minb == 2 ? ntt_rows_gathered_kernel<K2, LAZY, 2>
                            : ntt_rows_gathered_kernel<K2, LAZY, 3>;
  launch_kernel(true, kernel, grid, dim3(G::threads), 0, stream, dst, dst, t, g);
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
  // JAX_FHE_NTT_MAX_P caps P (for tuning and tests)
  static const int env_max_p = static_cast<int>(tuning_int("JAX_FHE_NTT_MAX_P", 4));
  // the one-block kernel takes whole_max_p's P (N = 4096: 1 forward, 2 inverse) rather than
  // falling back to the two phases at P = 4 (an H100 trace of the PIR expansion showed every
  // N = 4096 transform running as two phases at P = 4)
  const int max_p = s.log_n <= kMaxWholeLog && whole_enabled()
                        ? std::min(env_max_p, whole_max_p(s.log_n, INVERSE))
                        : env_max_p;
  if (!INVERSE && row_groups != nullptr && run_ntt_gathered<LAZY>(stream, s, src, dst, t, *row_groups, max_p)) {
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

// The forward's row tables (check_ntt_row_tables) for Tables::tw_rows: null where empty or not
// 16-byte aligned (the bulk copy's source; XLA's buffers are), so that the cluster kernel gathers
// them from tw and tw_shoup instead. JAX_FHE_NTT_ROW_BULK=0 makes it gather always (to compare the
// two paths; session 28).
const uint32_t* row_tables(ffi::Buffer<ffi::U32>& tw_rows) {
  static const bool bulk = tuning_int("JAX_FHE_NTT_ROW_BULK", 1) != 0;
  const uint32_t* p = bulk && tw_rows.element_count() ? tw_rows.typed_data() : nullptr;
  return reinterpret_cast<uintptr_t>(p) % 16 == 0 ? p : nullptr;
}

ffi::Error NttForwardCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                              ffi::Buffer<ffi::S32> rows, ffi::Buffer<ffi::U32> moduli,
                              ffi::Buffer<ffi::U32> tw, ffi::Buffer<ffi::U32> tw_shoup,
                              ffi::Buffer<ffi::U32> tw_rows, ffi::ResultBuffer<ffi::U32> y, bool lazy,
                              ffi::Span<const int32_t> row_groups) {
  PolyShape s;
  if (auto e = decode_poly_shape(x.dimensions(), "ntt input", &s); e.failure()) return e;
  int64_t table_rows = 0;
  if (auto e = check_ntt_args(s, y->dimensions(), x.dimensions(), rows.dimensions(),
                              moduli.dimensions(), tw.dimensions(), tw_shoup.dimensions(),
                              &table_rows);
      e.failure())
    return e;
  if (auto e = check_ntt_row_tables(s, tw_rows.dimensions(), table_rows); e.failure()) return e;
  // the members' shared row is the caller's contract here (the rows are in device memory; the
  // CPU handler checks it)
  if (auto e = check_row_groups(row_groups, s.limbs, nullptr); e.failure()) return e;
  if (s.polys == 0) return ffi::Error::Success();
  Tables t{rows.typed_data(), moduli.typed_data(), tw.typed_data(), tw_shoup.typed_data(),
           nullptr, nullptr, row_tables(tw_rows), static_cast<int>(s.limbs), s.log_n, 0, 1, 0};
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
           itw_shoup.typed_data(), n_inv.typed_data(), n_inv_shoup.typed_data(), nullptr,
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
                                  ffi::Buffer<ffi::U32> tw_rows, ffi::ResultBuffer<ffi::U32> y, bool lazy) {
  PolyShape s;
  int64_t table_rows = 0;
  if (auto e = check_ntt_lift_args(x.dimensions(), y->dimensions(), rows.dimensions(),
                                   moduli.dimensions(), tw.dimensions(), tw_shoup.dimensions(), &s,
                                   &table_rows);
      e.failure())
    return e;
  if (auto e = check_ntt_row_tables(s, tw_rows.dimensions(), table_rows); e.failure()) return e;
  if (s.polys == 0) return ffi::Error::Success();
  Tables t{rows.typed_data(), moduli.typed_data(), tw.typed_data(), tw_shoup.typed_data(),
           nullptr, nullptr, row_tables(tw_rows), static_cast<int>(s.limbs), s.log_n, 0, 1, 0};
  const int32_t* xi = x.typed_data();
  uint32_t* dst = y->typed_data();
  if (lazy && s.log_n <= kMaxWholeLog && whole_enabled()) {
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

// (4 resident blocks per SM: H100, L = 48, batch 16, a tail of 56 polynomials took 248 us
// forward, against 258 at 3; session 22)
bool ntt_stream_tail(bool inverse, bool launch, const uint32_t* src, uint32_t* dst, int64_t item0,
                     int64_t items, int64_t batch, const Tables& t, int64_t free_sms,
                     cudaStream_t stream) {
  return inverse ? stream_tail<true, 4>(launch, src, dst, item0, items, batch, t, free_sms, stream)
                 : stream_tail<false, 4>(launch, src, dst, item0, items, batch, t, free_sms, stream);
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
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<bool>("lazy"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(NttForwardCuda, NttForwardCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<bool>("lazy")
                                  .Attr<ffi::Span<const int32_t>>("row_groups"),
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
