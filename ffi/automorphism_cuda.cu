// Automorphism X -> X^g on CUDA, bit-identical to automorphism_cpu.cc.
// A gather within each limb: output slot k reads one source slot (computed on the fly), so
// the writes are coalesced and the scattered reads stay inside one 2^16-word limb (L1/L2).
#include <cuda_runtime.h>

#include "automorphism_args.h"
#include "common.h"
#include "cuda_device.cuh"
#include "modarith.h"

namespace jax_fhe {

namespace {

constexpr int kThreads = 256;

__global__ void automorphism_ntt_kernel(const uint32_t* __restrict__ x, uint32_t* __restrict__ y,
                                        int64_t total, int log_n, uint32_t galois) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= total) return;
  const uint32_t n_mask = (1u << log_n) - 1u;
  const uint32_t k = static_cast<uint32_t>(i) & n_mask;
  const int64_t base = i - k;
  y[i] = __ldg(x + base + automorphism_ntt_source(k, galois, log_n));
}

// sigma((x0 + add, x1, ...)) (automorphism_args.h). grid.x covers the N slots, grid.y the
// (entry, limb) pairs (strided): a thread computes its source slot once and moves that slot of
// every component, so the add and the index arithmetic are paid once per pair, in 32 bits.
__global__ void automorphism_ntt_add_kernel(const uint32_t* __restrict__ x, const uint32_t* __restrict__ add,
                                            const uint32_t* __restrict__ moduli, uint32_t* __restrict__ y,
                                            int pairs, int log_n, int limbs, int comps, bool add_batched,
                                            uint32_t galois) {
  const uint32_t k = blockIdx.x * kThreads + threadIdx.x;
  if (k >= (1u << log_n)) return;
  const uint32_t src = automorphism_ntt_source(k, galois, log_n);
  for (int pair = blockIdx.y; pair < pairs; pair += gridDim.y) {
    const int e = pair / limbs, l = pair - e * limbs;
    const int64_t x_off = (static_cast<int64_t>(e) * comps * limbs + l) << log_n;
    const int64_t a_off = (static_cast<int64_t>(add_batched ? e : 0) * limbs + l) << log_n;
    y[x_off + k] = add_mod(__ldg(x + x_off + src), __ldg(add + a_off + src), __ldg(moduli + l));
    for (int c = 1; c < comps; ++c) {
      const int64_t off = x_off + (static_cast<int64_t>(c) * limbs << log_n);
      y[off + k] = __ldg(x + off + src);
    }
  }
}

__global__ void automorphism_coeff_kernel(const uint32_t* __restrict__ x,
                                          const uint32_t* __restrict__ moduli,
                                          uint32_t* __restrict__ y, int64_t total, int limbs,
                                          int log_n, uint32_t galois_inv) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= total) return;
  const uint32_t n = 1u << log_n;
  const uint32_t k = static_cast<uint32_t>(i) & (n - 1u);
  const int64_t poly = i >> log_n;
  const uint32_t src = (k * galois_inv) & (2u * n - 1u);
  const uint32_t v = __ldg(x + (i - k) + (src & (n - 1u)));
  y[i] = src < n ? v : sub_mod(0u, v, __ldg(moduli + poly % limbs));
}

ffi::Error AutomorphismNttCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                                   ffi::ResultBuffer<ffi::U32> y, int64_t galois) {
  PolyShape s;
  if (auto e = check_automorphism_args(x.dimensions(), y->dimensions(), galois, &s);
      e.failure())
    return e;
  const int64_t total = s.polys * s.n;
  if (total == 0) return ffi::Error::Success();
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  automorphism_ntt_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      x.typed_data(), y->typed_data(), total, s.log_n, static_cast<uint32_t>(galois));
  return launch_status("automorphism_ntt");
}

ffi::Error AutomorphismNttAddCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x, ffi::Buffer<ffi::U32> add,
                                      ffi::Buffer<ffi::U32> moduli, ffi::ResultBuffer<ffi::U32> y,
                                      int64_t galois) {
  AutomorphismAddShape a;
  if (auto e = check_automorphism_add_args(x.dimensions(), add.dimensions(), moduli.dimensions(),
                                           y->dimensions(), galois, &a);
      e.failure())
    return e;
  const int64_t pairs = a.entries * a.s.limbs;
  if (pairs == 0 || a.s.n == 0) return ffi::Error::Success();
  if (pairs > INT32_MAX) return ffi::Error::InvalidArgument("automorphism_add: too many polynomials");
  const unsigned bx = static_cast<unsigned>((a.s.n + kThreads - 1) / kThreads);
  const unsigned by = static_cast<unsigned>(pairs < 65535 ? pairs : 65535);
  automorphism_ntt_add_kernel<<<dim3(bx, by), kThreads, 0, stream>>>(
      x.typed_data(), add.typed_data(), moduli.typed_data(), y->typed_data(), static_cast<int>(pairs), a.s.log_n,
      static_cast<int>(a.s.limbs), static_cast<int>(a.comps), a.add_batched, static_cast<uint32_t>(galois));
  return launch_status("automorphism_ntt_add");
}

ffi::Error AutomorphismCoeffCudaImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> x,
                                     ffi::Buffer<ffi::U32> moduli, ffi::ResultBuffer<ffi::U32> y,
                                     int64_t galois, int64_t galois_inv) {
  PolyShape s;
  if (auto e = check_automorphism_args(x.dimensions(), y->dimensions(), galois, &s);
      e.failure())
    return e;
  if (auto e = check_automorphism_coeff_args(s, moduli.dimensions(), galois, galois_inv); e.failure())
    return e;
  const int64_t total = s.polys * s.n;
  if (total == 0) return ffi::Error::Success();
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  automorphism_coeff_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      x.typed_data(), moduli.typed_data(), y->typed_data(), total, static_cast<int>(s.limbs),
      s.log_n, static_cast<uint32_t>(galois_inv));
  return launch_status("automorphism_coeff");
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(AutomorphismNttCuda, AutomorphismNttCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<int64_t>("galois"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(AutomorphismNttAddCuda, AutomorphismNttAddCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()  // x [E..., C, L, N]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // add [E..., L, N] or [L, N]
                                  .Arg<ffi::Buffer<ffi::U32>>()  // moduli [L]
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<int64_t>("galois"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(AutomorphismCoeffCuda, AutomorphismCoeffCudaImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U32>>()
                                  .Attr<int64_t>("galois")
                                  .Attr<int64_t>("galois_inv"),
                              {ffi::Traits::kCmdBufferCompatible});

}  // namespace jax_fhe
