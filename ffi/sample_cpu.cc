// Small signed polynomials and uniform residues from a ChaCha20 keystream on the CPU
// (sample_args.h).
#include "common.h"
#include "parallel.h"
#include "sample_args.h"

namespace jax_fhe {

namespace {

ffi::Error SampleSmallCpuImpl(ffi::Buffer<ffi::U32> key, ffi::ResultBuffer<ffi::S32> out,
                              int64_t stream, int64_t bound, ffi::Span<const int64_t> thresholds) {
  const int64_t total = element_count(out->dimensions());
  if (auto e = check_sample_args(key.dimensions(), total, thresholds, bound, stream); e.failure())
    return e;
  const uint32_t* k = key.typed_data();
  int32_t* o = out->typed_data();
  const int64_t blocks = (total + kSampleWordsPerBlock - 1) / kSampleWordsPerBlock;
  const int count = static_cast<int>(thresholds.size());
  parallel_for(blocks, 64, [&](int64_t b) {
    sample_block(k, static_cast<uint32_t>(stream), b, total, thresholds.begin(), count,
                 static_cast<int32_t>(bound), o);
  });
  return ffi::Error::Success();
}

ffi::Error SampleUniformCpuImpl(ffi::Buffer<ffi::U32> key, ffi::Buffer<ffi::U32> moduli,
                                ffi::ResultBuffer<ffi::U32> out, int64_t stream) {
  PolyShape p;
  if (auto e = check_uniform_args(key.dimensions(), moduli.dimensions(), out->dimensions(), stream, &p);
      e.failure())
    return e;
  const int64_t total = p.polys * p.n;
  const uint32_t* k = key.typed_data();
  const uint32_t* q = moduli.typed_data();
  uint32_t* o = out->typed_data();
  parallel_for((total + kSampleWordsPerBlock - 1) / kSampleWordsPerBlock, 64, [&](int64_t b) {
    uniform_block(k, static_cast<uint32_t>(stream), b, total, q, p.limbs, p.log_n, o);
  });
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(SampleUniformCpu, SampleUniformCpuImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()   // key [8]
                                  .Arg<ffi::Buffer<ffi::U32>>()   // moduli [L]
                                  .Ret<ffi::Buffer<ffi::U32>>()   // [..., L, N]
                                  .Attr<int64_t>("stream"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(SampleSmallCpu, SampleSmallCpuImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()   // key [8]
                                  .Ret<ffi::Buffer<ffi::S32>>()   // [...] small signed values
                                  .Attr<int64_t>("stream")
                                  .Attr<int64_t>("bound")
                                  .Attr<ffi::Span<const int64_t>>("thresholds"));

}  // namespace jax_fhe
