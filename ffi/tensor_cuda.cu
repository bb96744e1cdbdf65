// Tensor product of degree-1 ciphertexts on CUDA, bit-identical to tensor_cpu.cc: one thread per
// coefficient reads its four inputs once and writes its three outputs (the HBM floor: 4 + 3
// words), where a fusion of the three products into a stacked output reads the inputs twice.
#include <cuda_runtime.h>

#include "common.h"
#include "cuda_device.cuh"
#include "tensor_args.h"

namespace jax_fhe {

namespace {

constexpr int kThreads = 256;

// FLAT: each operand's batch block is b * its flat stride (the common case); else per-axis strides.
template <bool FLAT>
__global__ void tensor_product_kernel(const uint32_t* __restrict__ x, const uint32_t* __restrict__ y,
                                      const uint32_t* __restrict__ moduli,
                                      const uint32_t* __restrict__ neg_qinv,
                                      const uint32_t* __restrict__ r2, uint32_t* __restrict__ d,
                                      int64_t total, int64_t ln, int log_n, TensorShape s) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= total) return;
  const int64_t b = i / ln, r = i - b * ln;   // batch entry, offset within one [L, N] block
  const int64_t l = r >> log_n;
  const int64_t xo = FLAT ? b * s.x_flat : tensor_batch_offset(b, s.axes, s.dims, s.x_stride);
  const int64_t yo = FLAT ? b * s.y_flat : tensor_batch_offset(b, s.axes, s.dims, s.y_stride);
  const uint32_t* xp = x + xo + r;
  const uint32_t* yp = y + yo + r;
  uint32_t* dp = d + b * 3 * ln + r;
  tensor_element(__ldg(xp), __ldg(xp + ln), __ldg(yp), __ldg(yp + ln), __ldg(moduli + l),
                 __ldg(neg_qinv + l), __ldg(r2 + l), dp, dp + ln, dp + 2 * ln);
}

ffi::Error TensorProductCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                                 ffi::Buffer<ffi::U32> y, ffi::Buffer<ffi::U32> moduli,
                                 ffi::Buffer<ffi::U32> neg_qinv, ffi::Buffer<ffi::U32> r2,
                                 ffi::ResultBuffer<ffi::U32> out) {
  TensorShape s;
  if (auto e = check_tensor_args(x.dimensions(), y.dimensions(), out->dimensions(),
                                 moduli.dimensions(), neg_qinv.dimensions(), r2.dimensions(), &s);
      e.failure())
    return e;
  const int64_t ln = s.limbs * s.n;
  const int64_t total = s.batch * ln;
  if (total == 0) return ffi::Error::Success();
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  auto kernel = s.flat ? tensor_product_kernel<true> : tensor_product_kernel<false>;
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      x.typed_data(), y.typed_data(), moduli.typed_data(), neg_qinv.typed_data(), r2.typed_data(),
      out->typed_data(), total, ln, s.log_n, s);
  return launch_status("tensor_product");
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(TensorProductCuda, TensorProductCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>(),
                              {ffi::Traits::kCmdBufferCompatible});

}  // namespace jax_fhe
