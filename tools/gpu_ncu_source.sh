#!/usr/bin/env bash
# On the device machine (under scripts/gpu_prebuilt.sh): per-instruction stall sampling of the NTT
# kernels with Nsight Compute's source counters, at L = 48, batch 16 (first launch of each case).
# PROFILE_CASES: ntt and/or intt (the library's kernels for that shape: on sm_90 the cluster
# kernel), default "ntt intt". Writes under
# $OUT, per case: the summary (.txt) and the SASS source page as CSV (.sass.csv: per instruction,
# executions and stall samples by reason; analyse with tools/stall_segments.py); the report
# itself (.ncu-rep) only with KEEP_REP=1.
set -uo pipefail
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for op in ${PROFILE_CASES:-ntt intt}; do
  name="$op" rep="/tmp/ncu_${op}"
  $NCU --clock-control none -k regex:'ntt_' --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --import-source no -f -o "$rep" \
    python3 tools/profile_kernels.py $op --limbs 48 --batch 16 > "/tmp/$name.log" 2>&1 || tail -5 "/tmp/$name.log"
  $NCU --import "$rep.ncu-rep" > "$OUT/$name.txt" 2>&1
  $NCU --import "$rep.ncu-rep" --page source --csv --print-source sass > "$OUT/$name.sass.csv" 2>&1
  [ "${KEEP_REP:-0}" = "1" ] && cp "$rep.ncu-rep" "$OUT/"
  echo "== $name"; grep -E "Duration|Warp Cycles Per Issued|ntt_" "$OUT/$name.txt" | cut -c1-160 | head -6
done
