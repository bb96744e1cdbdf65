// Every XLA FFI handler the extension exports, declared once for module.cc.
#pragma once

#include "xla/ffi/api/ffi.h"

namespace jax_fhe {

XLA_FFI_DECLARE_HANDLER_SYMBOL(NttForwardCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(NttInverseCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(BconvCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(AutomorphismNttCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(AutomorphismCoeffCpu);

#ifdef JAX_FHE_WITH_CUDA
XLA_FFI_DECLARE_HANDLER_SYMBOL(NttForwardCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(NttInverseCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(BconvCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(AutomorphismNttCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(AutomorphismCoeffCuda);
#endif

}  // namespace jax_fhe
