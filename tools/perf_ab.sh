#!/usr/bin/env bash
# On the device machine (under scripts/gpu_prebuilt.sh): the performance checks of a change
# against a baseline package in one call, alternating the builds (tools/ab_kernels.sh):
#   NTT L = 48 forward/inverse at batches NTT_BATCHES (bits checked first, tools/ntt_ab_bits.sh),
#   BConv 12 -> 48 at batch 16, the (48, 12, 4) key switch, HMult/HRot at n16-boot's levels.
#   BASE=bench_out/main_pkg ROUNDS=2 bash scripts/gpu_prebuilt.sh bash tools/perf_ab.sh
# Logs under $OUT (perf_*.log); the summary lines are printed.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
BASE=${BASE:?set BASE to the baseline package folder or module}
ROUNDS=${ROUNDS:-2}
OUT="$OUT" BASE="$BASE" ROUNDS="$ROUNDS" NTT_BATCHES=${NTT_BATCHES:-16,64} timeout ${NTT_TIMEOUT:-330} \
  bash tools/ntt_ab_bits.sh > "$OUT/perf_ntt.log" 2>&1
echo "ntt rc $?"; tail -n 12 "$OUT/perf_ntt.log"
timeout ${CKKS_TIMEOUT:-420} bash tools/ab_kernels.sh "$BASE" "$ROUNDS" bash -c \
  'python3 benchmarks/bench_kernels.py --backend gpu --kernels bconv --batches 16 --bconv-out 48 --trace /tmp/bc_$AB_BUILD$AB_ROUND 2>&1 | grep -E "^bconv30|copy"; python3 benchmarks/bench_ckks.py --batch 8 --ks-limbs 48 2>&1 | tail -n 14' \
  > "$OUT/perf_ckks.log" 2>&1
echo "ckks rc $?"; cat "$OUT/perf_ckks.log"
