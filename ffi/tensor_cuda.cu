// Tensor product of degree-1 ciphertexts on CUDA, bit-identical to tensor_cpu.cc: a thread reads
// four coefficients of each input polynomial once (16-byte loads) and writes its three outputs
// (the HBM floor: 4 + 3 words; a square 2 + 3), where a fusion of the three products into a
// stacked output reads the inputs twice.
#include <cuda_runtime.h>

#include "common.h"
#include "cuda_device.cuh"
#include "tensor_args.h"

namespace jax_fhe {

namespace {

constexpr int kThreads = 256;
constexpr int kWords = 4;            // coefficients per thread: one 16-byte load per polynomial

__device__ __forceinline__ uint4 load4(const uint32_t* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}

// grid.x covers one [L, N] block in steps of kWords coefficients, grid.y the batch (looping
// when it exceeds the grid), so a thread divides nothing. FLAT: each operand's batch block is
// b * its flat stride; else per-axis strides. SQUARE: x and y are one buffer read at the same
// offsets (a square), so y is not loaded again.
template <bool FLAT, bool SQUARE>
__global__ void tensor_product_kernel(const uint32_t* __restrict__ x, const uint32_t* __restrict__ y,
                                      const uint32_t* __restrict__ moduli,
                                      const uint32_t* __restrict__ neg_qinv,
                                      const uint32_t* __restrict__ r2, uint32_t* __restrict__ d,
                                      int64_t batch, int64_t ln, int log_n, TensorShape s) {
  const int64_t r = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) * kWords;
  if (r >= ln) return;
  const int64_t l = r >> log_n;
  const uint32_t q = __ldg(moduli + l), nq = __ldg(neg_qinv + l), rr = __ldg(r2 + l);
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    const int64_t xo = FLAT ? b * s.x_flat : tensor_batch_offset(b, s.axes, s.dims, s.x_stride);
    const uint32_t* xp = x + xo + r;
    const uint4 x0 = load4(xp), x1 = load4(xp + ln);
    uint4 y0 = x0, y1 = x1;
    if (!SQUARE) {
      const int64_t yo = FLAT ? b * s.y_flat : tensor_batch_offset(b, s.axes, s.dims, s.y_stride);
      y0 = load4(y + yo + r);
      y1 = load4(y + yo + r + ln);
    }
    uint4 d0, d1, d2;
    tensor_element(x0.x, x1.x, y0.x, y1.x, q, nq, rr, &d0.x, &d1.x, &d2.x);
    tensor_element(x0.y, x1.y, y0.y, y1.y, q, nq, rr, &d0.y, &d1.y, &d2.y);
    tensor_element(x0.z, x1.z, y0.z, y1.z, q, nq, rr, &d0.z, &d1.z, &d2.z);
    tensor_element(x0.w, x1.w, y0.w, y1.w, q, nq, rr, &d0.w, &d1.w, &d2.w);
    uint4* dp = reinterpret_cast<uint4*>(d + b * 3 * ln + r);
    const int64_t ln4 = ln / kWords;
    dp[0] = d0;
    dp[ln4] = d1;
    dp[2 * ln4] = d2;
  }
}

template <bool FLAT, bool SQUARE>
void launch(cudaStream_t stream, dim3 grid, const uint32_t* x, const uint32_t* y, const uint32_t* q,
            const uint32_t* nq, const uint32_t* rr, uint32_t* d, int64_t batch, int64_t ln,
            const TensorShape& s) {
  tensor_product_kernel<FLAT, SQUARE><<<grid, kThreads, 0, stream>>>(x, y, q, nq, rr, d, batch, ln,
                                                                     s.log_n, s);
}

// Whether y reads exactly the words x reads, batch entry by batch entry.
bool same_operand(const uint32_t* x, const uint32_t* y, const TensorShape& s) {
  if (x != y) return false;
  if (s.flat) return s.x_flat == s.y_flat;
  for (int i = 0; i < s.axes; ++i)
    if (s.x_stride[i] != s.y_stride[i]) return false;
  return true;
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
  const int64_t ln = s.limbs * s.n;   // a multiple of kWords: N >= 2^10
  if (s.batch * ln == 0) return ffi::Error::Success();
  const dim3 grid(static_cast<unsigned>((ln / kWords + kThreads - 1) / kThreads),
                  static_cast<unsigned>(s.batch < 65535 ? s.batch : 65535));
  const uint32_t* xd = x.typed_data();
  const uint32_t* yd = y.typed_data();
  const bool square = same_operand(xd, yd, s);
  auto go = s.flat ? (square ? launch<true, true> : launch<true, false>)
                   : (square ? launch<false, true> : launch<false, false>);
  go(stream, grid, xd, yd, moduli.typed_data(), neg_qinv.typed_data(), r2.typed_data(),
     out->typed_data(), s.batch, ln, s);
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
