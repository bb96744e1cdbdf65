#!/usr/bin/env bash
# On the device machine (under scripts/gpu_prebuilt.sh): the bootstrapping benchmark at
# n16-boot (full slots unless SLOTS is set), JSON and log under $OUT.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
timeout ${BOOT_TIMEOUT:-540} python3 benchmarks/bench_bootstrap.py ${SLOTS:+--slots $SLOTS} --runs ${RUNS:-10} \
  --precision-runs ${PREC_RUNS:-10} --out "$OUT/boot${TAG:-}.json" ${BOOT_ARGS:-} 2>&1 | grep -v "rotation keys:" | tee "$OUT/boot${TAG:-}.log"
