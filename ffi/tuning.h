// The kernels' tuning constants, in one place. Each is a measured choice (the measurement in one
// line; docs/kernels.md has the design); none is read from the environment: a variant that lost
// its measurement is deleted, not kept behind a switch. Changing one changes which code runs or
// how it is launched, never the results (every path gives the CPU handlers' bits).
#pragma once

#include <cstdint>

namespace jax_fhe {

// ---- NTT, two-phase kernels (ntt_cuda.cu) ---------------------------------------------------

// Columns per phase-1 tile (warps move 64-byte row segments). H200, L = 48, batch 16: forward
// columns kernel 138.3 us at 16 against 152.7 at 8 (32-byte segments); inverse 139.9 / 166.4.
constexpr int kColumnsPerTile = 16;

// Largest log N the one-block kernel (whole transform in one block) takes. H100, N = 4096,
// L = 3, 20480 polynomials: forward 1074 us against 1667 for two phases, inverse 877 / 1599.
constexpr int kMaxWholeLog = 12;

// Resident blocks per SM asked of the compiler (__launch_bounds__) for the N = 2^16 phases
// (0: no hint). The hint sets the register budget (256 threads: none -> ptxas keeps 64 or fewer
// and interleaves loads with butterflies, 2 -> up to 128, 3 -> 85). H200, L = 48 (device us):
//   columns P = 4: 2 (batch 16 forward 138.3 / inverse 139.9; 3: 162.1 / 165.1; none 160.3 / 151.2)
//   rows P = 4: none forward (136.8-137.7 against 145.6-147.2 at 3), 3 inverse (133.1-135.0
//     against 137.3 with none)
//   columns P = 2: none forward (135.5 against 157.7 at 2), 3 inverse (147.3 against 181.2 none)
//   P = 1: 3 for columns (ModUp's NTT, 192 limbs: 44.1 against 50.0), 2 for rows (50.7 / 51.6)
//   gathered rows (ntt_rows_gathered_kernel): none (38.3-38.9 against 41.2-41.8 at 3)
constexpr int ntt_min_blocks(bool columns, int p, bool inverse, bool gathered = false) {
  if (gathered) return 0;
  if (p == 4) return columns ? 2 : (inverse ? 3 : 0);
  if (p == 2) return columns ? (inverse ? 3 : 0) : 2;
  return columns ? 3 : 2;
}

// Whether the rows phase at N = 2^15, 2^16 (rows of 256) computes its rows' twiddles
// (compute_row_twiddles) instead of reading the N-word tables, by polynomials per thread and
// direction (the plain rows kernel only; the fused key product's keeps the tables). P = 4 keeps
// them: a twiddle serves four polynomials, and its 33 KB tile plus 16 KB of twiddles would pass
// the 48 KB of static shared memory. H200,
// full-slot n16-boot bootstrap, kernel totals in two interleaved rounds: P = 2 forward 1,207-1,210
// against 1,396-1,400 us, P = 1 inverse 647 against 664-666 us; P = 1 forward 2,233-2,234 against
// 2,213-2,215 us (kept on the tables).
constexpr bool ntt_rows_computed_twiddles(int p, bool inverse) {
  return p == 2 || (p == 1 && inverse);
}

// ---- NTT, single-pass cluster kernel (N = 2^16, sm_90; ntt_cluster_*) -----------------------

// Fewest polynomials per launch for the cluster kernel; fewer leave each of its clusters too few
// items to fill its pipeline. H100, halves form against two phases, device / elapsed us: 96
// polynomials 54.2 / 65.5 against 57.3 / 59.1 (faster on the device, slower end to end); 144
// polynomials 69.1 / 81.3 against 86.7 / 98.7.
constexpr int64_t kClusterMinPolys = 128;

// The tail (the launch's last polynomials, run by the streamed kernel on the SMs the clusters
// leave idle) is sized so that both end together: one cluster does the work of this many of the
// tail's SMs. H100, L = 48, batch 16: tails of 40 / 48 / 56 took 242 / 241 / 258 us forward
// beside the clusters' 242 / 240 / 238; the split forward does more per cluster (13: tails of 44
// and 176 at batch 16 and 64 took it from 61.6 to 63.2% and from 65.3 to 68.3% of copy).
constexpr int64_t kTailSmsPerCluster = 12;
constexpr int64_t kSplitForwardTailSmsPerCluster = 13;

// The tail's resident blocks per SM (64 registers). H100, L = 48, batch 16, tail 48: forward
// 239.9 us at 4 against 240.6 at 3; tail 56: 248.1 against 257.8.
constexpr int kTailBlocksPerSm = 4;

// Bytes of polynomials per chunk of the tail's queue (the intermediate of two chunks sits in L2).
// H100: chunks of 4 or 2 MB measured no faster (tails of 48 and 56, batch 16).
constexpr int64_t kStreamChunkBytes = int64_t{12} << 20;

// ---- Base conversion (bconv_cuda.cu) --------------------------------------------------------

// SIMT kernel: split the output limbs over blockIdx.z until the grid has this many blocks per SM
// (each split re-reads the inputs, from L2). H200, one (48, 12, 4) key switch: ModUp's / ModDown's
// conversion 44.4 / 26.5 us at 2 against 49.2 / 30.1 at 4 and 55.6 / 34.6 at 8.
constexpr int64_t kBconvBlocksPerSm = 2;

// SIMT kernel at 9..12 inputs: coefficients per thread are 4 (80 registers) where the grid has at
// least this many blocks per SM without splitting, else 2 (60 registers). H200, one (48, 12, 4)
// key switch: ModUp's conversion 44.4 us at 2 against 48.3 at 4; H100, 12 -> 48 at batch 16:
// 166 us at 4 against 177 at 2.
constexpr int64_t kBconvWideMinBlocksPerSm = 2;

// SIMT kernel at 9..12 inputs: output limbs summed per step. H200, ModUp at batch 16: 577.2 us at
// 2 against 589.1 at 1 (four per step cut instructions 14% but not time).
constexpr int kBconvOutsPerStep = 2;

// Tensor-core kernel: warps per block (four: same time, H200, ModDown 17.9 against 17.6 us) and
// blocks per SM its grid is sized for (1, more chunks per block: key switch 315.7 against
// 306.5 us, H200).
constexpr int kBconvMmaWarps = 8;
constexpr int64_t kBconvMmaBlocksPerSm = 2;

}  // namespace jax_fhe
