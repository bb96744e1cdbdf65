// Integer multiply throughput on the device (sm_90): warp instructions per SM per clock for
// IMAD.WIDE.U32 (mad.wide.u32), IMAD (mul.lo), IMAD.HI (mul.hi), and the lo/hi pair that a
// 64-bit multiply-accumulate could use instead of IMAD.WIDE. Each thread runs 8 independent
// chains, so dependency latency is hidden; the answer is the pipe's rate. Build and run:
//   nvcc -O3 -arch=sm_90a -o /tmp/imad_rate tools/imad_rate.cu && /tmp/imad_rate
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

constexpr int kIters = 4096;

template <int MODE>
__global__ void kern(const uint32_t* in, uint64_t* out, uint32_t b) {
  uint32_t a[8];
  uint64_t acc[8];
  for (int i = 0; i < 8; ++i) { a[i] = in[threadIdx.x + i]; acc[i] = a[i]; }
  for (int it = 0; it < kIters; ++it) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (MODE == 0) {  // IMAD.WIDE.U32 accumulate
        asm volatile("mad.wide.u32 %0, %1, %2, %0;" : "+l"(acc[i]) : "r"(a[i]), "r"(b));
      } else if (MODE == 1) {  // IMAD
        uint32_t lo = static_cast<uint32_t>(acc[i]);
        asm volatile("mad.lo.u32 %0, %1, %2, %0;" : "+r"(lo) : "r"(a[i]), "r"(b));
        acc[i] = lo;
      } else if (MODE == 2) {  // IMAD.HI
        uint32_t lo = static_cast<uint32_t>(acc[i]);
        asm volatile("mad.hi.u32 %0, %1, %2, %0;" : "+r"(lo) : "r"(a[i]), "r"(b));
        acc[i] = lo;
      } else {  // lo and hi halves with carry: mad.lo.cc + madc.hi
        uint32_t lo = static_cast<uint32_t>(acc[i]), hi = static_cast<uint32_t>(acc[i] >> 32);
        asm volatile("mad.lo.cc.u32 %0, %2, %3, %0;\n\tmadc.hi.u32 %1, %2, %3, %1;"
                     : "+r"(lo), "+r"(hi) : "r"(a[i]), "r"(b));
        acc[i] = (static_cast<uint64_t>(hi) << 32) | lo;
      }
    }
  }
  uint64_t s = 0;
  for (int i = 0; i < 8; ++i) s += acc[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

int main() {
  int sms = 0, clk = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);  // kHz
  uint32_t* in; uint64_t* out;
  cudaMalloc(&in, 4096 * 4); cudaMemset(in, 1, 4096 * 4);
  const int blocks = sms * 8, threads = 256;
  cudaMalloc(&out, sizeof(uint64_t) * blocks * threads);
  const char* names[] = {"mad.wide.u32 (IMAD.WIDE.U32)", "mad.lo.u32 (IMAD)", "mad.hi.u32 (IMAD.HI)",
                         "mad.lo.cc + madc.hi (pair)"};
  for (int mode = 0; mode < 4; ++mode) {
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int rep = 0; rep < 2; ++rep) {
      cudaEventRecord(e0);
      if (mode == 0) kern<0><<<blocks, threads>>>(in, out, 12345u);
      if (mode == 1) kern<1><<<blocks, threads>>>(in, out, 12345u);
      if (mode == 2) kern<2><<<blocks, threads>>>(in, out, 12345u);
      if (mode == 3) kern<3><<<blocks, threads>>>(in, out, 12345u);
      cudaEventRecord(e1); cudaEventSynchronize(e1);
    }
    float ms; cudaEventElapsedTime(&ms, e0, e1);
    const double warp_ops = double(blocks) * threads / 32 * kIters * 8;  // PTX ops (pair = 1)
    const double per_sm_clk = warp_ops / sms / (ms * 1e-3 * clk * 1e3);
    printf("%-30s %8.3f ms  %.3f warp-ops/SM/clk (at the %d MHz rated clock)\n", names[mode], ms,
           per_sm_clk, clk / 1000);
  }
  return 0;
}
