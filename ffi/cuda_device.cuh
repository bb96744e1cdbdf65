// Per-device facts the CUDA launchers size their grids and pick kernels by (device attributes,
// kernel occupancy, symbol addresses, one-time kernel attributes), computed once per device:
// these are driver or runtime calls, not something to repeat per launch.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

namespace jax_fhe {

// read(device) for the current device, computed once per device and cached; a result <= 0
// means "could not be read" and is not cached (returns 0). Each `Read` type (each lambda) has
// its own cache.
template <typename Read>
inline int64_t per_device(Read read) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int64_t> cache[kMaxDevices] = {};  // 0: not read yet
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return 0;
  int64_t v = cache[dev].load(std::memory_order_relaxed);
  if (v <= 0) {
    v = read(dev);
    if (v <= 0) {
      cudaGetLastError();  // a failed query leaves no error for the next launch to report
      return 0;
    }
    cache[dev].store(v, std::memory_order_relaxed);
  }
  return v;
}

// The attribute of the current device, or `fallback` if it cannot be read.
template <cudaDeviceAttr ATTR>
inline int device_attribute(int fallback) {
  const int64_t v = per_device([](int dev) -> int64_t {
    int a = 0;
    return cudaDeviceGetAttribute(&a, ATTR, dev) == cudaSuccess ? a : 0;
  });
  return v > 0 ? static_cast<int>(v) : fallback;
}

inline int sm_count() { return device_attribute<cudaDevAttrMultiProcessorCount>(100); }
inline int cc_major() { return device_attribute<cudaDevAttrComputeCapabilityMajor>(0); }

}  // namespace jax_fhe
