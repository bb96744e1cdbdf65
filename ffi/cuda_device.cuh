// Per-device facts the CUDA launchers size their grids and pick kernels by (device attributes,
// kernel occupancy, symbol addresses, one-time kernel attributes), computed once per device:
// these are driver or runtime calls, not something to repeat per launch.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "common.h"

namespace jax_fhe {

// The handler's result after its launches: the launch error, if any, named by `what`.
inline ffi::Error launch_status(const char* what) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return ffi::Error::Internal(std::string(what) + " launch failed: " + cudaGetErrorString(err));
  return ffi::Error::Success();
}

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

// Programmatic dependent launch (sm_90+). A kernel launched with `dependent` may start while the
// kernel before it on the stream finishes: its blocks are scheduled once every block of that
// kernel has called allow_dependents() (or exited), and wait in wait_for_producer() until that
// kernel has completed and its writes are visible. This hides the launch gap and the ramp
// between the two phases of an NTT (and the NTT and the fused key product; H200, one (48, 12, 4)
// key switch: 326.7-329.1 us against 333.2-333.4 without). On older devices the launch is an
// ordinary one and both calls are no-ops.
inline bool pdl_enabled() { return cc_major() >= 9; }

template <typename... Params, typename... Args>
inline cudaError_t launch_kernel(bool dependent, void (*kernel)(Params...), dim3 grid, dim3 block,
                                 size_t smem, cudaStream_t stream, Args&&... args) {
  if (!dependent || !pdl_enabled()) {
    kernel<<<grid, block, smem, stream>>>(std::forward<Args>(args)...);
    return cudaGetLastError();
  }
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

#if defined(__CUDACC__)
__device__ __forceinline__ void wait_for_producer() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// BYTES (4, 8 or 16) global -> shared copy that does not hold a register (cp.async, sm_80 and
// newer); 16-byte copies bypass L1 (.cg), smaller ones cannot (.ca).
template <int BYTES>
__device__ __forceinline__ void copy_async(void* dst, const void* src) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(d), "l"(src), "n"(BYTES) : "memory");
#else
  memcpy(dst, src, BYTES);
#endif
}
__device__ __forceinline__ void copy_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// wait until at most PENDING of this thread's newest commit groups are still in flight
template <int PENDING>
__device__ __forceinline__ void copy_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory");
#endif
}
#endif

}  // namespace jax_fhe
