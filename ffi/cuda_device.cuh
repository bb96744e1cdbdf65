// Device attributes the CUDA launchers size their grids and pick kernels by, read once per
// device (cudaDeviceGetAttribute is a driver call: not something to repeat per launch).
#pragma once

#include <cuda_runtime.h>

#include <atomic>

namespace jax_fhe {

// The attribute of the current device, or `fallback` if it cannot be read.
template <cudaDeviceAttr ATTR>
inline int device_attribute(int fallback) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cache[kMaxDevices] = {};  // 0: not read yet
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return fallback;
  int v = cache[dev].load(std::memory_order_relaxed);
  if (v == 0) {
    if (cudaDeviceGetAttribute(&v, ATTR, dev) != cudaSuccess || v <= 0) return fallback;
    cache[dev].store(v, std::memory_order_relaxed);
  }
  return v;
}

inline int sm_count() { return device_attribute<cudaDevAttrMultiProcessorCount>(100); }
inline int cc_major() { return device_attribute<cudaDevAttrComputeCapabilityMajor>(0); }

}  // namespace jax_fhe
