// Single-pass negacyclic NTT / INTT for N = 2^16 on sm_90 and newer (thread-block
// clusters with distributed shared memory), bit-identical to ntt_cpu.cc. Device code shared
// with the two-phase kernels is in ntt_device.cuh.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

#include "cuda_device.cuh"
#include "ntt_device.cuh"

namespace jax_fhe {
namespace ntt_cuda {

namespace {

// ---------------------------------------------------------------------------------------------
// A thread-block cluster of C = N / 8192 blocks holds one polynomial, 32 KB per block. The
// forward transform runs the column stages on each block's slice of n2 / C columns and writes
// the result to a tile in the block's own shared memory; after a cluster barrier each block
// reads its n1 / C rows from the C tiles through distributed shared memory and runs the row
// stages. The inverse mirrors this (rows first, columns second). Every coefficient crosses HBM
// once each way, against twice for the two-phase kernels. Threads hold 16 elements (radix-16
// rounds: two rounds per phase). Twiddle indexing is the two-phase kernels' (W = 1 for columns,
// n1 + row for rows).
//
// The geometry is written for N = 2^14 .. 2^16, but only N = 2^16 is instantiated: it is the
// size the CKKS work uses, and at K1 = 7 the compiler put the forward kernel's registers in
// local memory (a 64-byte stack frame), so 2^14 / 2^15 keep the two-phase kernels.
constexpr int kClusterSlice = 8192;  // elements per block
constexpr int kClusterLogR = 4;
constexpr int kClusterThreads = kClusterSlice >> kClusterLogR;  // 512

template <int LOGN>
struct ClusterGeometry {
  static constexpr int K1 = LOGN / 2, K2 = LOGN - K1;
  static constexpr int n1 = 1 << K1, n2 = 1 << K2;
  static constexpr int C = (1 << LOGN) / kClusterSlice;  // blocks per polynomial
  static constexpr int cpb = n2 / C;                     // columns per block
  static constexpr int rpb = n1 / C;                     // rows per block
  static constexpr int tpc = n1 >> kClusterLogR;         // threads per column
  static constexpr int tpr = n2 >> kClusterLogR;         // threads per row
  static_assert(cpb * tpc == kClusterThreads && rpb * tpr == kClusterThreads, "geometry");
  static_assert(cpb >= 32, "a warp covers 32 columns of one row");
  static constexpr int row_pad = n2 + n2 / 32;  // row-phase exchange: one pad word per 32
  static constexpr int inv_tile_stride = n2 + tpr;  // the row stride moves a warp's rows apart
  static constexpr int fwd_tile_words = n1 * cpb;
  static constexpr int inv_tile_words = rpb * inv_tile_stride;
  static constexpr int tile_words = fwd_tile_words > inv_tile_words ? fwd_tile_words : inv_tile_words;
  static constexpr int work_words = n1 * cpb > rpb * row_pad ? n1 * cpb : rpb * row_pad;
  static constexpr size_t smem_bytes = sizeof(uint32_t) * (tile_words + work_words);
  // forward tile [n1][cpb]: the rows one warp reads in the row phase are XOR-swizzled onto
  // different banks
  static __device__ __forceinline__ int fwd_tile(int row, int col) {
    return row * cpb + (col ^ ((row % (32 / tpr)) * tpr));
  }
};

template <int LOGN, bool INVERSE>
__global__ void __launch_bounds__(kClusterThreads, 2)
    ntt_cluster_kernel(const uint32_t* src, uint32_t* dst, Tables t) {  // may alias (in place)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr bool LAZY = true;  // primes below 2^30 only (run_ntt_cluster checks)
  using G = ClusterGeometry<LOGN>;
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  extern __shared__ uint32_t smem[];
  uint32_t* tile = smem;
  uint32_t* work = smem + G::tile_words;
  const int rank = static_cast<int>(cluster.block_rank());
  constexpr int64_t N = int64_t{1} << LOGN;
  // limb-major grid (blockIdx.y = limb * batch_count + entry): the clusters running at one
  // time share a few limbs, so their twiddle tables stay in L2
  const unsigned entries = static_cast<unsigned>(t.batch_count);  // at most 65535 per launch
  const int limb = static_cast<int>(blockIdx.y / entries);
  const int64_t poly = (t.batch0 + blockIdx.y % entries) * t.limbs + limb;
  const int tab = t.rows[limb];
  const uint32_t q = t.moduli[tab];
  const uint32_t* tw = t.tw + tab * N;
  const uint32_t* tws = t.tw_shoup + tab * N;
  const uint32_t* s = src + poly * N;
  uint32_t* d = dst + poly * N;
  // column phase: this block's columns [rank * cpb, (rank + 1) * cpb)
  const int c = threadIdx.x % G::cpb, tc = threadIdx.x / G::cpb;
  const int col = rank * G::cpb + c;
  // row phase: this block's rows [rank * rpb, (rank + 1) * rpb)
  const int r = threadIdx.x / G::tpr, tr = threadIdx.x % G::tpr;
  const int mrow = rank * G::rpb + r;
  uint32_t* work_row = work + r * G::row_pad;
  auto col_sidx = [&](int, int u) { return u * G::cpb + c; };
  auto row_sidx = [&](int, int u) { return u + (u >> 5); };
  auto none4 = [](int, int, int) { return uint4{}; };
  auto none_store4 = [](int, int, uint4, int) {};
  auto release_tiles = [&] { cluster.barrier_arrive(); };  // done reading the other tiles
  if (!INVERSE) {
    run_rounds<kClusterLogR, G::K1, 1, false, LAZY, false>(
        tc, 1u, tw, tws, q, work, [&](int, int u, int) { return s[static_cast<int64_t>(u) * G::n2 + col]; },
        [&](int, int u, uint32_t v, int) { tile[G::fwd_tile(u, c)] = v; }, col_sidx, none4, none_store4,
        NoHook{});
    cluster.sync();
    auto finish = [&](uint32_t v) { return csub(csub(v, 2 * q), q); };  // [0, 4q) -> [0, q)
    uint32_t* out = d + static_cast<int64_t>(mrow) * G::n2;
    run_rounds<kClusterLogR, G::K2, 1, false, LAZY, true>(
        tr, static_cast<uint32_t>(G::n1 + mrow), tw, tws, q, work_row,
        [&](int, int u, int) {
          const uint32_t* remote = cluster.map_shared_rank(tile, u / G::cpb);
          return remote[G::fwd_tile(mrow, u % G::cpb)];
        },
        [&](int, int u, uint32_t v, int) { out[u] = finish(v); }, row_sidx, none4,
        [&](int, int u, uint4 v, int) {
          *reinterpret_cast<uint4*>(out + u) =
              make_uint4(finish(v.x), finish(v.y), finish(v.z), finish(v.w));
        },
        release_tiles);
  } else {
    const uint32_t* in = s + static_cast<int64_t>(mrow) * G::n2;
    uint32_t* tile_row = tile + r * G::inv_tile_stride;
    run_rounds<kClusterLogR, G::K2, 1, true, LAZY, true>(
        tr, static_cast<uint32_t>(G::n1 + mrow), tw, tws, q, work_row,
        [&](int, int u, int) { return in[u]; }, [&](int, int u, uint32_t v, int) { tile_row[u] = v; },
        row_sidx, [&](int, int u, int) { return *reinterpret_cast<const uint4*>(in + u); },
        none_store4, NoHook{});
    cluster.sync();
    const uint32_t scale = t.scale[tab], scale_s = t.scale_shoup[tab];
    run_rounds<kClusterLogR, G::K1, 1, true, LAZY, false>(
        tc, 1u, tw, tws, q, work,
        [&](int, int u, int) {
          const uint32_t* remote = cluster.map_shared_rank(tile, u / G::rpb);
          return remote[(u % G::rpb) * G::inv_tile_stride + col];
        },
        [&](int, int u, uint32_t v, int) {
          d[static_cast<int64_t>(u) * G::n2 + col] = mul_shoup(v, scale, scale_s, q);
        },
        col_sidx, none4, none_store4, release_tiles);
  }
  cluster.barrier_wait();  // keep this block's tile alive until the cluster has read it
#else
  __trap();  // launched only where the device reports compute capability 9.0 or newer
#endif
}

// Launch the cluster kernel over `groups` polynomials (grid.y); returns false (and clears the
// error) if the launch is refused, e.g. clusters of this size cannot be scheduled.
template <int LOGN, bool INVERSE>
bool launch_cluster(const uint32_t* src, uint32_t* dst, int64_t groups, const Tables& t,
                    cudaStream_t stream) {
  using G = ClusterGeometry<LOGN>;
  auto kernel = ntt_cluster_kernel<LOGN, INVERSE>;
  // the shared-memory opt-in is per device and per kernel: set it once, not on every launch
  const bool opted_in = per_device([&](int) -> int64_t {
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(G::smem_bytes)) == cudaSuccess;
  });
  if (!opted_in) return false;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(G::C, static_cast<unsigned>(groups), 1);
  cfg.blockDim = dim3(kClusterThreads, 1, 1);
  cfg.dynamicSmemBytes = G::smem_bytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = G::C;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  if (cudaLaunchKernelEx(&cfg, kernel, src, dst, t) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return true;
}

template <bool INVERSE>
ClusterRun run_cluster(cudaStream_t stream, const PolyShape& s, const uint32_t* src, uint32_t* dst,
                       Tables t) {
  const int64_t batch = s.polys / s.limbs;
  const int64_t batch_step = std::max<int64_t>(1, 65535 / s.limbs);
  for (int64_t b0 = 0; b0 < batch; b0 += batch_step) {
    t.batch0 = b0;
    t.batch_count = std::min(batch_step, batch - b0);
    const int64_t groups = t.batch_count * s.limbs;
    bool ok = false;
    switch (s.log_n) {
      case 16: ok = launch_cluster<16, INVERSE>(src, dst, groups, t, stream); break;
    }
    // a refused first launch falls back to the two-phase kernels; a refusal after some
    // chunks already ran (in place) cannot be redone, so it is an error
    if (!ok) return b0 == 0 ? ClusterRun::kNotRun : ClusterRun::kFailed;
  }
  return ClusterRun::kRan;
}

}  // namespace

// Opt-in (JAX_FHE_NTT_CLUSTER=1): on an H100 (L = 48, N = 2^16) it measured slower than the
// two-phase kernels for the forward transform (498 vs 388 us at batch 16) and about equal for
// the inverse (418 vs 426 us), because with one polynomial per thread every twiddle load serves
// one butterfly (the two-phase kernels share each load among 4 polynomials), which keeps L2
// busy. Only N = 2^16 in the lazy mode (every prime below 2^30) runs here.
ClusterRun run_ntt_cluster(cudaStream_t stream, const PolyShape& s, const uint32_t* src,
                           uint32_t* dst, Tables t, bool inverse, bool lazy) {
  static const bool enabled = tuning_int("JAX_FHE_NTT_CLUSTER", 0) == 1;
  if (!enabled || !lazy || s.log_n != 16 || cc_major() < 9)
    return ClusterRun::kNotRun;
  return inverse ? run_cluster<true>(stream, s, src, dst, t) : run_cluster<false>(stream, s, src, dst, t);
}

}  // namespace ntt_cuda
}  // namespace jax_fhe
