// Small signed polynomials and uniform residues from a ChaCha20 keystream on CUDA,
// bit-identical to sample_cpu.cc: a thread computes one 64-byte block and writes its 8 values;
// the table sits in shared memory.
#include <cuda_runtime.h>

#include "common.h"
#include "cuda_device.cuh"
#include "sample_args.h"

namespace jax_fhe {

namespace {

constexpr int kThreads = 128;

struct SampleTable {
  int64_t t[kMaxSampleTable];
};

// The key into shared memory; the keystream block this thread computes (-1: none).
__device__ __forceinline__ int64_t block_of_thread(const uint32_t* key, uint32_t* k, int64_t total) {
  if (threadIdx.x < 8) k[threadIdx.x] = __ldg(key + threadIdx.x);
  __syncthreads();
  const int64_t block = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  return block * kSampleWordsPerBlock < total ? block : -1;
}

__global__ void sample_small_kernel(const uint32_t* __restrict__ key, int32_t* __restrict__ out,
                                    int64_t total, uint32_t stream, int32_t bound, int count,
                                    const SampleTable table) {
  __shared__ int64_t t[kMaxSampleTable];
  __shared__ uint32_t k[8];
  for (int i = threadIdx.x; i < count; i += blockDim.x) t[i] = table.t[i];
  const int64_t block = block_of_thread(key, k, total);
  if (block < 0) return;
  sample_block(k, stream, block, total, t, count, bound, out);
}

ffi::Error SampleSmallCudaImpl(cudaStream_t cu_stream, ffi::Buffer<ffi::U32> key,
                               ffi::ResultBuffer<ffi::S32> out, int64_t stream, int64_t bound,
                               ffi::Span<const int64_t> thresholds) {
  const int64_t total = element_count(out->dimensions());
  if (auto e = check_sample_args(key.dimensions(), total, thresholds, bound, stream); e.failure())
    return e;
  if (total == 0) return ffi::Error::Success();
  SampleTable table;
  const int count = static_cast<int>(thresholds.size());
  for (int i = 0; i < count; ++i) table.t[i] = thresholds[i];
  const int64_t blocks = (total + kSampleWordsPerBlock - 1) / kSampleWordsPerBlock;
  const unsigned grid = static_cast<unsigned>((blocks + kThreads - 1) / kThreads);
  sample_small_kernel<<<grid, kThreads, 0, cu_stream>>>(key.typed_data(), out->typed_data(), total,
                                                       static_cast<uint32_t>(stream),
                                                       static_cast<int32_t>(bound), count, table);
  return launch_status("sample_small");
}

__global__ void sample_uniform_kernel(const uint32_t* __restrict__ key,
                                      const uint32_t* __restrict__ moduli, uint32_t* __restrict__ out,
                                      int64_t total, uint32_t stream, int64_t limbs, int log_n) {
  __shared__ uint32_t k[8];
  const int64_t block = block_of_thread(key, k, total);
  if (block < 0) return;
  uniform_block(k, stream, block, total, moduli, limbs, log_n, out);
}

ffi::Error SampleUniformCudaImpl(cudaStream_t cu_stream, ffi::Buffer<ffi::U32> key,
                                 ffi::Buffer<ffi::U32> moduli, ffi::ResultBuffer<ffi::U32> out,
                                 int64_t stream) {
  PolyShape p;
  if (auto e = check_uniform_args(key.dimensions(), moduli.dimensions(), out->dimensions(), stream, &p);
      e.failure())
    return e;
  const int64_t total = p.polys * p.n;
  if (total == 0) return ffi::Error::Success();
  const int64_t blocks = (total + kSampleWordsPerBlock - 1) / kSampleWordsPerBlock;
  const unsigned grid = static_cast<unsigned>((blocks + kThreads - 1) / kThreads);
  sample_uniform_kernel<<<grid, kThreads, 0, cu_stream>>>(key.typed_data(), moduli.typed_data(),
                                                         out->typed_data(), total,
                                                         static_cast<uint32_t>(stream), p.limbs, p.log_n);
  return launch_status("sample_uniform");
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(SampleUniformCuda, SampleUniformCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<int64_t>("stream"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(SampleSmallCuda, SampleSmallCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>()
                                  .Attr<int64_t>("stream")
                                  .Attr<int64_t>("bound")
                                  .Attr<ffi::Span<const int64_t>>("thresholds"),
                              {ffi::Traits::kCmdBufferCompatible});

}  // namespace jax_fhe
