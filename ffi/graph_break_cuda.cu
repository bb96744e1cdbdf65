// The CUDA side of graph_break (semantics in graph_break_cpu.cc): registered without the
// command-buffer trait, so that XLA splits its CUDA graphs here.
#include <cuda_runtime.h>

#include "common.h"

namespace jax_fhe {

namespace {

ffi::Error GraphBreakCudaImpl(cudaStream_t stream, ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> out) {
  if (out->untyped_data() != x.untyped_data() &&
      cudaMemcpyAsync(out->untyped_data(), x.untyped_data(), x.size_bytes(), cudaMemcpyDeviceToDevice,
                      stream) != cudaSuccess)
    return ffi::Error::Internal("graph_break: copy failed");
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(GraphBreakCuda, GraphBreakCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>());

}  // namespace jax_fhe
