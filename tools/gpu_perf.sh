#!/usr/bin/env bash
# One device call for performance work: build (sm_90a) + the kernel tests, then the NTT and
# BConv, with GPU clocks and power logged alongside to tell throttling from kernel time, the packing GEMM benchmark, the CKKS benchmark and, if present,
# the PIR stage profile. Each part can be skipped (SKIP_NTT, SKIP_BCONV, SKIP_MODGEMM,
# SKIP_CKKS, SKIP_PIR=1).
# Logs under $OUT.   bash tools/gpu_perf.sh [pytest-args for the kernel tests]
set -uo pipefail
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
SKIP_BENCH=1 bash scripts/gpu_run.sh ${KERNEL_TESTS:-tests/test_ntt.py tests/test_bconv.py tests/test_cross_backend.py} "$@" || exit 1
B="python3 benchmarks/bench_kernels.py --backend gpu"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 200 > "$OUT/smi.csv" 2>&1 &
SMI=$!
if [ "${SKIP_NTT:-0}" != "1" ]; then
  echo "== NTT"
  timeout 120 $B --kernels ntt --limbs ${NTT_LIMBS:-48} --batches ${NTT_BATCHES:-1,4,16} 2>&1 \
    | grep -E "^(ntt|intt)30 +[0-9]|copy bandwidth"
fi
if [ "${SKIP_BCONV:-0}" != "1" ]; then
  echo "== BConv"
  timeout 120 $B --kernels bconv --batches 4,16 --bconv-out 48 2>&1 | grep -E "^bconv30|^bconv31"
fi
if [ "${SKIP_MODGEMM:-0}" != "1" ] && [ -f benchmarks/bench_modgemm.py ]; then
  echo "== PIR packing GEMM (fused FFI kernel vs XLA)"
  timeout 150 python3 benchmarks/bench_modgemm.py ${MODGEMM_ARGS:---slots 1024 --cols 2 64} --json "$OUT/modgemm.json" 2>&1 | tail -8
fi
if [ "${SKIP_CKKS:-0}" != "1" ]; then
  # with and without the fused centred BConv (JAX_FHE_FUSED_CENTERED)
  for fc in ${CKKS_FUSED_CENTERED_SWEEP:-0}; do
    echo "== CKKS, JAX_FHE_FUSED_CENTERED=$fc"
    JAX_FHE_FUSED_CENTERED=$fc timeout 240 python3 benchmarks/bench_ckks.py ${CKKS_ARGS:---batch 8} --out "$OUT/ckks_fc$fc.json" 2>&1 | tee "$OUT/ckks_fc$fc.log" | tail -${CKKS_TAIL:-25}
  done
fi
if [ "${SKIP_PIR:-0}" != "1" ] && [ -f benchmarks/profile_pir.py ]; then
  echo "== PIR stages"
  timeout ${PIR_TIMEOUT:-200} python3 benchmarks/profile_pir.py ${PIR_ARGS:---gib 1 --batches 1 32 --reps 3} --out "$OUT/pir_stages.json" 2>&1 | tee "$OUT/pir.log" | tail -40
fi
kill $SMI 2>/dev/null
awk -F', ' 'NR>1 {n++; c+=$2; p+=$4} END {if (n) printf "smi: %d samples, mean SM clock %.0f MHz, mean power %.0f W\n", n, c/n, p/n}' "$OUT/smi.csv"
