// How thread-block clusters land on this GPU's SMs (a diagnostic, not part of the library).
// For each configuration (cluster size C, threads, shared memory per CTA) it prints what
// cudaOccupancyMaxActiveClusters promises and what a launch of more clusters than that
// actually holds at once: every CTA records its SM, counts itself in, and spins until all of
// the grid is in or 5 ms pass; the first wave's count (the smallest seen) is the co-resident CTAs. Then the SMs
// each cluster of the first wave used, which groups SMs into GPCs.
//   nvcc -std=c++17 -O2 -arch=sm_90a -o /tmp/cluster_probe tools/cluster_probe.cu && /tmp/cluster_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

__device__ unsigned arrived;
__device__ unsigned long long globaltime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__global__ void resident(int* smid, int* seen) {
  extern __shared__ int pad[];
  if (threadIdx.x == 0) {
    unsigned s, c;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(c));
    smid[blockIdx.x] = static_cast<int>(s);
    pad[0] = s;
    atomicAdd(&arrived, 1u);
    const unsigned long long t0 = globaltime();
    unsigned now = 0;
    while ((now = atomicAdd(&arrived, 0u)) < gridDim.x && globaltime() - t0 < 5000000ull) {
    }
    seen[blockIdx.x] = static_cast<int>(now);
  }
}

int main() {
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  std::printf("%s: %d SMs, %zu B smem/SM, %zu B smem/block optin\n", p.name, p.multiProcessorCount,
              p.sharedMemPerMultiprocessor, p.sharedMemPerBlockOptin);
  cudaFuncSetAttribute(resident, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  cudaFuncSetAttribute(resident, cudaFuncAttributeMaxDynamicSharedMemorySize, 220 * 1024);
  struct Cfg { int c, threads, smem_kb; };
  const Cfg cfgs[] = {{16, 256, 100}, {16, 256, 60}, {16, 512, 200}, {8, 512, 200}, {8, 256, 100},
                      {4, 512, 200}, {4, 256, 100}, {2, 512, 200}, {2, 1024, 200}, {12, 256, 100},
                      {10, 256, 100}};
  std::map<int, std::set<int>> gpc_of;  // SM -> SMs that shared a cluster with it
  for (const Cfg& f : cfgs) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = f.c, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
    cfg.blockDim = dim3(f.threads);
    cfg.dynamicSmemBytes = f.smem_kb * 1024;
    cfg.attrs = attr, cfg.numAttrs = 1;
    cfg.gridDim = dim3(f.c);
    int promised = 0;
    cudaError_t e = cudaOccupancyMaxActiveClusters(&promised, resident, &cfg);
    if (e != cudaSuccess) {
      std::printf("C=%d threads=%d smem=%dKB: occupancy query failed: %s\n", f.c, f.threads, f.smem_kb,
                  cudaGetErrorString(e));
      cudaGetLastError();
      continue;
    }
    const int clusters = promised + 8, blocks = clusters * f.c;
    cfg.gridDim = dim3(blocks);
    int *smid, *seen;
    cudaMalloc(&smid, blocks * sizeof(int));
    cudaMalloc(&seen, blocks * sizeof(int));
    unsigned zero = 0;
    cudaMemcpyToSymbol(arrived, &zero, sizeof zero);
    e = cudaLaunchKernelEx(&cfg, resident, smid, seen);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    std::vector<int> h_smid(blocks), h_seen(blocks);
    cudaMemcpy(h_smid.data(), smid, blocks * sizeof(int), cudaMemcpyDeviceToHost);
    cudaMemcpy(h_seen.data(), seen, blocks * sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(smid), cudaFree(seen);
    if (e != cudaSuccess) {
      std::printf("C=%d: launch failed: %s\n", f.c, cudaGetErrorString(e));
      cudaGetLastError();
      continue;
    }
    // the first wave times out seeing only itself; later waves see more (the last, the whole grid)
    const int co = *std::min_element(h_seen.begin(), h_seen.end());
    std::set<int> sms;
    std::map<int, int> per_sm;
    int first_wave_clusters = 0;
    for (int b = 0; b < blocks; b += f.c) {
      if (h_seen[b] != co) continue;
      ++first_wave_clusters;
      std::set<int> cl;
      for (int k = 0; k < f.c; ++k) cl.insert(h_smid[b + k]), ++per_sm[h_smid[b + k]];
      for (int a : cl) gpc_of[a].insert(cl.begin(), cl.end());
      sms.insert(cl.begin(), cl.end());
    }
    int max_per_sm = 0;
    for (auto& kv : per_sm) max_per_sm = std::max(max_per_sm, kv.second);
    std::printf("C=%2d threads=%4d smem=%3dKB: promised %2d clusters; co-resident %4d CTAs = %5.2f clusters on %3zu SMs (<= %d CTAs/SM)\n",
                f.c, f.threads, f.smem_kb, promised, co, static_cast<double>(co) / f.c, sms.size(), max_per_sm);
  }
  // GPCs: connected components of the shared-cluster relation
  std::set<int> done;
  int gpc = 0;
  for (auto& kv : gpc_of) {
    if (done.count(kv.first)) continue;
    std::set<int> comp, todo = {kv.first};
    while (!todo.empty()) {
      const int a = *todo.begin();
      todo.erase(todo.begin());
      if (!comp.insert(a).second) continue;
      for (int b : gpc_of[a]) if (!comp.count(b)) todo.insert(b);
    }
    done.insert(comp.begin(), comp.end());
    std::printf("GPC %d: %zu SMs:", gpc++, comp.size());
    for (int a : comp) std::printf(" %d", a);
    std::printf("\n");
  }
  return 0;
}
