#!/usr/bin/env bash
# On the device machine (after scripts/prebuilt_env.sh or an install): Nsight Compute metrics of
# every kernel of one hybrid key switch (tools/profile_kernels.py keyswitch; the first call,
# --launch-count KS_PROFILE_LAUNCHES of the kernels matching KS_PROFILE_KERNELS), one table row per
# kernel (tools/ncu_table.py).
#   bash scripts/gpu_prebuilt.sh bash tools/gpu_ks_profile.sh [--limbs 48] [--batch 1]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
STALLS=$(printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' long_scoreboard short_scoreboard barrier mio_throttle wait math_pipe_throttle not_selected lg_throttle dispatch_stall no_instruction | sed 's/,$//')
METRICS="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__inst_executed.sum,launch__registers_per_thread,launch__grid_size,launch__block_size,launch__occupancy_limit_registers,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,$STALLS"
XLA_PYTHON_CLIENT_PREALLOCATE=false timeout ${KS_PROFILE_TIMEOUT:-240} "$NCU" --clock-control none --kernel-name-base demangled -k "regex:${KS_PROFILE_KERNELS:-jax_fhe}" --launch-count "${KS_PROFILE_LAUNCHES:-16}" --csv --page raw --metrics "$METRICS" \
  python3 tools/profile_kernels.py keyswitch "$@" > "$OUT/ncu_ks.csv" 2> "$OUT/ncu_ks.err"
echo "ncu rc $?"
python3 tools/ncu_table.py "$OUT/ncu_ks.csv"
