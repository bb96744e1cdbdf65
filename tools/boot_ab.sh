#!/usr/bin/env bash
# On the device machine (carried kernels module): A/B of the full-slot n16-boot bootstrap between
# a base package in .base/jax_fhe (carried) and the working tree, interleaved (base, new, base,
# new) in one call; logs and JSON under $OUT. AB_SIDES="name:dir ..." compares more packages
# (default "base:.base new:", an empty dir being the working tree). AB_TESTS (pytest paths) run
# first on the GPU; AB_TRACE=1 traces one bootstrap of each run (kernel totals in the log).
set -u
cd "$(dirname "$0")/.."
. scripts/prebuilt_env.sh
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
if [ -n "${AB_TESTS:-}" ]; then
  (cd tests && timeout ${AB_TEST_TIMEOUT:-240} python3 -m pytest -q -m "gpu and not slow" ${AB_TESTS} 2>&1 | tail -15) | tee "$OUT/ab_tests.log"
fi
for round in $(seq ${AB_ROUNDS:-2}); do
  for spec in ${AB_SIDES:-base:.base new:}; do
    side=${spec%%:*}; dir=${spec#*:}
    path=$PWD; [ -n "$dir" ] && path=$PWD/$dir:$PWD
    trace=""; [ -n "${AB_TRACE:-}" ] && trace="--trace /tmp/ab_trace_$side$round"
    PYTHONPATH=$path timeout ${AB_BENCH_TIMEOUT:-150} python3 benchmarks/bench_bootstrap.py --runs 10 \
      --precision-runs 3 --no-stages --out "$OUT/ab_${side}${round}.json" $trace ${AB_ARGS:-} 2>&1 \
      | grep -E "^bootstrap|^precision|GPU kernels|${AB_GREP:-diagonal_sums}" | sed "s/^/$side$round: /" | tee -a "$OUT/ab.log"
  done
done
