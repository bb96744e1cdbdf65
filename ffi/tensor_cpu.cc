// Tensor product of degree-1 ciphertexts on the CPU: (x0 y0, x0 y1 + x1 y0, x1 y1) mod q.
#include "common.h"
#include "parallel.h"
#include "tensor_args.h"

namespace jax_fhe {

namespace {

ffi::Error TensorProductCpuImpl(ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::U32> y,
                                ffi::Buffer<ffi::U32> moduli, ffi::Buffer<ffi::U32> neg_qinv,
                                ffi::Buffer<ffi::U32> r2, ffi::ResultBuffer<ffi::U32> out) {
  TensorShape s;
  if (auto e = check_tensor_args(x.dimensions(), y.dimensions(), out->dimensions(),
                                 moduli.dimensions(), neg_qinv.dimensions(), r2.dimensions(), &s);
      e.failure())
    return e;
  const int64_t ln = s.limbs * s.n;
  const uint32_t* xs = x.typed_data();
  const uint32_t* ys = y.typed_data();
  const uint32_t* q = moduli.typed_data();
  const uint32_t* nq = neg_qinv.typed_data();
  const uint32_t* rr = r2.typed_data();
  uint32_t* d = out->typed_data();
  parallel_for(s.batch * s.limbs, s.n, [&](int64_t bl) {
    const int64_t b = bl / s.limbs, l = bl % s.limbs;
    const int64_t xo = s.flat ? b * s.x_flat : tensor_batch_offset(b, s.axes, s.dims, s.x_stride);
    const int64_t yo = s.flat ? b * s.y_flat : tensor_batch_offset(b, s.axes, s.dims, s.y_stride);
    const uint32_t* xp = xs + xo + l * s.n;
    const uint32_t* yp = ys + yo + l * s.n;
    uint32_t* dp = d + b * 3 * ln + l * s.n;
    for (int64_t k = 0; k < s.n; ++k)
      tensor_element(xp[k], xp[ln + k], yp[k], yp[ln + k], q[l], nq[l], rr[l], dp + k, dp + ln + k,
                     dp + 2 * ln + k);
  });
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(TensorProductCpu, TensorProductCpuImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()   // x [..., 2, L, N]
                                  .Arg<ffi::Buffer<ffi::U32>>()   // y [..., 2, L, N]
                                  .Arg<ffi::Buffer<ffi::U32>>()   // moduli [L]
                                  .Arg<ffi::Buffer<ffi::U32>>()   // neg_qinv [L]
                                  .Arg<ffi::Buffer<ffi::U32>>()   // r2 [L]
                                  .Ret<ffi::Buffer<ffi::U32>>());  // [..., 3, L, N]

}  // namespace jax_fhe
