// Launch of the single-pass cluster NTT (N = 2^16, sm_90; the kernel in ntt_cluster_kernel.cuh)
// and of its tail: whether it applies, how many clusters fit, how many polynomials the tail
// takes. Bit-identical to ntt_cpu.cc, like every NTT path.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda_device.cuh"
#include "ntt_cluster_kernel.cuh"
#include "ntt_device.cuh"
#include "tuning.h"

namespace jax_fhe {
namespace ntt_cuda {

namespace {

// The tail (ntt_stream_tail): a cluster needs 8 SMs of one GPC, so an H100 or H200 fits 15
// clusters and leaves 12 of its 132 SMs idle. The streamed two-phase kernel runs the launch's
// last polynomials there, launched as dependent on the cluster kernel, whose CTAs allow it at
// once: its blocks go to the idle SMs only. Per SM it is slower: one cluster does about the work
// of `sms_per_cluster` SMs of it (tuning.h), and the tail's share is sized so that both end
// together, rounded down to the streamed kernel's groups of 4 entries of a limb.
int64_t tail_polys(int64_t polys, int64_t batch, int64_t clusters, int64_t free_sms,
                   int64_t sms_per_cluster) {
  if (free_sms <= 0 || batch % 4 != 0) return 0;
  const int64_t want = polys * free_sms / (free_sms + clusters * sms_per_cluster);
  return std::max<int64_t>(0, std::min(want, polys - clusters)) / 4 * 4;
}

// The launch configuration of the kernel: `clusters` clusters of 8 CTAs of 512 threads.
cudaLaunchConfig_t split_config(int64_t clusters, cudaStream_t stream, cudaLaunchAttribute* attr) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(clusters * Cluster::kCtas), 1, 1);
  cfg.blockDim = dim3(2 * Cluster::kThreads, 1, 1);
  cfg.dynamicSmemBytes = sizeof(SplitSmem);
  cfg.stream = stream;
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = Cluster::kCtas;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}

// Clusters of the kernel that fit on the device at once (0 if none or the query fails); also
// opts the kernel into its shared memory. Once per device.
template <bool INVERSE>
int64_t max_active_split_clusters() {
  return per_device([](int) -> int64_t {
    constexpr int smem = static_cast<int>(sizeof(SplitSmem));
    if (cudaFuncSetAttribute(ntt_split_kernel<INVERSE>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess)
      return 0;
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = split_config(1, nullptr, attr);
    int clusters = 0;
    return cudaOccupancyMaxActiveClusters(&clusters, ntt_split_kernel<INVERSE>, &cfg) == cudaSuccess ? clusters : 0;
  });
}

template <bool INVERSE>
bool run_split(cudaStream_t stream, const PolyShape& s, const uint32_t* src, uint32_t* dst, const Tables& t) {
  const int64_t fit = max_active_split_clusters<INVERSE>();
  if (fit <= 0) return false;
  const int64_t clusters = std::min(fit, s.polys), batch = s.polys / s.limbs;
  // the tail: the launch's last polynomials, on the SMs the clusters leave idle (only where
  // every cluster fits at once, so that the tail's blocks cannot take a cluster's SMs)
  const int64_t free_sms = sm_count() - clusters * Cluster::kCtas;
  constexpr int64_t kSmsPerCluster = INVERSE ? kTailSmsPerCluster : kSplitForwardTailSmsPerCluster;
  int64_t tail = clusters == fit && pdl_enabled() ? tail_polys(s.polys, batch, clusters, free_sms, kSmsPerCluster) : 0;
  if (tail > 0 && !ntt_stream_tail(INVERSE, false, src, dst, s.polys - tail, tail, batch, t, free_sms, stream))
    tail = 0;  // (checked before anything is launched)
  const int64_t items = s.polys - tail;
  // the limbs of a cluster's range must fit its shared-memory limb table
  const int64_t most = (items + clusters - 1) / clusters;
  if ((most - 1) / batch + 2 > kMaxLimbSpan) return false;
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = split_config(clusters, stream, attr);
  if (cudaLaunchKernelEx(&cfg, ntt_split_kernel<INVERSE>, src, dst, t, items, batch) != cudaSuccess) {
    cudaGetLastError();  // refused (e.g. no cluster can be scheduled): the caller falls back
    return false;
  }
  if (tail > 0) ntt_stream_tail(INVERSE, true, src, dst, s.polys - tail, tail, batch, t, free_sms, stream);
  return true;
}

}  // namespace

bool run_ntt_cluster(cudaStream_t stream, const PolyShape& s, const uint32_t* src, uint32_t* dst,
                     const Tables& t, bool inverse, bool lazy) {
  if (!lazy || s.log_n != kLogN || cc_major() < 9 || s.polys < kClusterMinPolys) return false;
  return inverse ? run_split<true>(stream, s, src, dst, t) : run_split<false>(stream, s, src, dst, t);
}

}  // namespace ntt_cuda
}  // namespace jax_fhe
