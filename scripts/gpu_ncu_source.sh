#!/usr/bin/env bash
# On the device machine (under scripts/gpu_prebuilt.sh): per-instruction stall sampling of the NTT
# kernels with Nsight Compute's source counters. For each op in $PROFILE_OPS (ntt, intt) and each
# cluster size in $CLUSTERS (JAX_FHE_NTT_CLUSTER values; 0 = the two-phase kernels), profiles the
# first launch at L = 48, batch 16 and writes under $OUT: the report (.ncu-rep), the summary and
# the SASS source page as CSV (per instruction: executed count and stall samples by reason).
set -uo pipefail
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for c in ${CLUSTERS:-8 16}; do
  for op in ${PROFILE_OPS:-ntt intt}; do
    name="${op}_c${c}"
    JAX_FHE_NTT_CLUSTER=$c $NCU --clock-control none -k regex:'ntt_' --launch-count 1 \
      --section SourceCounters --section WarpStateStats --section SpeedOfLight \
      --import-source no -f -o "$OUT/$name" \
      python3 benchmarks/profile_kernels.py $op --limbs 48 --batch 16 > "$OUT/$name.log" 2>&1
    $NCU --import "$OUT/$name.ncu-rep" > "$OUT/$name.txt" 2>&1
    $NCU --import "$OUT/$name.ncu-rep" --page source --csv --print-source sass > "$OUT/$name.sass.csv" 2>&1
    echo "== $name"; grep -E "Duration|Warp Cycles Per Issued|Executed Ipc|Stall|ntt_" "$OUT/$name.txt" | cut -c1-160 | head -20
    head -c 600 "$OUT/$name.sass.csv"; echo
  done
done
