// Every XLA FFI handler the extension exports, declared once for module.cc.
#pragma once

#include "xla/ffi/api/ffi.h"

namespace jax_fhe {

XLA_FFI_DECLARE_HANDLER_SYMBOL(NttForwardCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(NttInverseCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(NttForwardLiftCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(BconvCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(BconvCenteredCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(AutomorphismNttCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(AutomorphismCoeffCpu);
XLA_FFI_DECLARE_HANDLER_SYMBOL(ModMatmulPlanesCpu);

#ifdef JAX_FHE_WITH_CUDA
XLA_FFI_DECLARE_HANDLER_SYMBOL(NttForwardCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(NttInverseCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(NttForwardLiftCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(BconvCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(BconvCenteredCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(AutomorphismNttCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(AutomorphismCoeffCuda);
XLA_FFI_DECLARE_HANDLER_SYMBOL(ModMatmulPlanesCuda);
#endif

}  // namespace jax_fhe
