#!/usr/bin/env bash
# Build, then profile the first NTT launches and one BConv with Nsight Compute (--clock-control
# none: the card's clocks are left alone). Output under $OUT.
set -uo pipefail
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
export JAX_FHE_CUDA=ON JAX_FHE_CUDA_GENCODE="-gencode=arch=compute_90a,code=sm_90a"
if [ "${SKIP_BUILD:-0}" != "1" ]; then
  python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
fi
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
SECTIONS="--section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section InstructionStats --section LaunchStats"
for op in ${PROFILE_OPS:-ntt bconv30}; do
  # NCU_STALLS=1 adds the per-reason stall metrics (cycles stalled per issued instruction)
  EXTRA=""
  if [ "${NCU_STALLS:-0}" = "1" ]; then
    EXTRA="--metrics $(printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' long_scoreboard short_scoreboard barrier mio_throttle wait math_pipe_throttle not_selected selected lg_throttle dispatch_stall no_instruction membar drain tex_throttle imc_miss branch_resolving sleeping | sed 's/,$//')"
  fi
  # NCU_METRICS: more metrics (comma-separated), e.g. shared-memory bank conflicts or L2 traffic
  if [ -n "${NCU_METRICS:-}" ]; then
    if [ -n "$EXTRA" ]; then EXTRA="$EXTRA,$NCU_METRICS"; else EXTRA="--metrics $NCU_METRICS"; fi
  fi
  $NCU --clock-control none -k regex:'ntt_|bconv_' --launch-count 2 $SECTIONS $EXTRA \
    python3 tools/profile_kernels.py $op "$@" > "$OUT/ncu_$op.txt" 2>&1
  grep -E "ntt_|bconv_|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|Theoretical Occ|Warp Cycles Per Issued|Issue Slot|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Stall|OPT|Block Limit|Pipe|Executed Ipc|Issued Warp|Grid Size|Executed Instructions  |issue_stalled|${NCU_METRICS_GREP:-issue_stalled}" "$OUT/ncu_$op.txt" | grep -v "^\s*$" | cut -c1-150 | head -${PROFILE_LINES:-70}
done
