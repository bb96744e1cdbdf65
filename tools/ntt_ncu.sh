#!/usr/bin/env bash
# On the device machine: Nsight Compute's view of one launch of an NTT kernel (N = 2^16, L = 48,
# batch NCU_BATCH, default 16, from bench_kernels.py): warp states, speed of light and the
# per-instruction stall samples (SASS), as CSV files under $OUT next to the report.
#   bash scripts/gpu_prebuilt.sh bash tools/ntt_ncu.sh "ntt_split_kernel<false>"
# (ncu fixes the clocks at base while it measures: read its stall shares, not its durations.)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
regex=$1
rep="$OUT/ncu_$(printf '%s' "$regex" | tr -c 'A-Za-z0-9' _)"
timeout 420 ncu --kernel-name-base demangled --kernel-name "regex:$regex" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SourceCounters --section LaunchStats \
    --section MemoryWorkloadAnalysis -f -o "$rep" \
    python3 benchmarks/bench_kernels.py --backend gpu --kernels ntt --limbs 48 --batches "${NCU_BATCH:-16}" \
    > "$rep.run.log" 2>&1
echo "ncu rc $? ($(tail -c 300 "$rep.run.log" | tr '\n' ' '))"
ncu -i "$rep.ncu-rep" --page details --csv > "$rep.details.csv" 2>&1
ncu -i "$rep.ncu-rep" --page source --csv --print-source sass > "$rep.sass.csv" 2>&1
ls -la "$OUT"
