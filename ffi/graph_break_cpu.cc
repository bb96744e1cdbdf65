// A no-op between two parts of a program that is not command-buffer compatible, so XLA ends
// one CUDA graph before it and starts another after it: the GPU runs the first graph while the
// host launches the next (a single graph of about 1,300 nodes took 2.5-3 ms of host time in
// cuGraphLaunch before its first kernel ran). The output aliases the input; where XLA gave
// them separate buffers, the data is copied.
#include <cstring>

#include "common.h"

namespace jax_fhe {

namespace {

ffi::Error GraphBreakCpuImpl(ffi::AnyBuffer x, ffi::Result<ffi::AnyBuffer> out) {
  if (out->untyped_data() != x.untyped_data())
    std::memcpy(out->untyped_data(), x.untyped_data(), x.size_bytes());
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(GraphBreakCpu, GraphBreakCpuImpl,
                              ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>());

}  // namespace jax_fhe
