#!/usr/bin/env bash
# On the device machine (after scripts/prebuilt_env.sh or an install): the N = 2^16 NTT and INTT
# at L = 48 (bench_kernels.py, 30-bit primes) under runtime variants; per-kernel device time from
# a trace. One log per variant under $OUT.
#   bash scripts/gpu_prebuilt.sh bash tools/ntt_variants.sh "" "XLA_FLAGS=..." ...
# NTT_BATCHES (default 1,16). Each argument is a space-separated list of VAR=value settings
# ("" = defaults). Under tools/ab_kernels.sh the logs carry the build and round in their names.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
i=0
for cfg in "$@"; do
  i=$((i + 1))
  log="$OUT/ntt_${AB_BUILD:-}${AB_ROUND:-}v$i.log"
  echo "=== variant $i: ${cfg:-defaults}"
  rm -rf "/tmp/ntt_trace_v$i"  # a trace left by an earlier run would be read instead
  env $cfg timeout 150 python3 benchmarks/bench_kernels.py --backend gpu --kernels ntt --limbs 48 \
      --batches "${NTT_BATCHES:-1,16}" --trace "/tmp/ntt_trace_v$i" > "$log" 2>&1
  echo "rc $?"
  grep -E "^(ntt|intt)3[01] +[0-9]|copy bandwidth|trace:" "$log"
done
