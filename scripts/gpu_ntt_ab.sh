#!/usr/bin/env bash
# One device call: the NTT with a compile-time variant A (default build) against variant B
# (the build with CUDA flags $AB_FLAGS, default -DJAX_FHE_NTT_NO_TWIDDLE_PREFETCH): the GPU NTT
# tests and cross-backend checks on A, then for each build the NTT at N = 2^16, L = 48 (B = 1,
# 16), at PIR's ring (N = 4096, L = 3) and the (48, 12, 4) key switch. Logs under $OUT.
set -uo pipefail
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
bench() {
  timeout 90 python3 benchmarks/bench_kernels.py --backend gpu --kernels ntt --limbs 48 --batches 1,16 \
    --trace /tmp/ab_trace_$1 2>&1 | grep -E "^(ntt|intt)30 +[0-9]|copy bandwidth"
  timeout 90 python3 benchmarks/bench_kernels.py --backend gpu --kernels ntt,lift --log-n 12 --limbs 3 \
    --batches 20480 --trace /tmp/ab_pir_$1 2>&1 | grep -E "^(ntt|intt|lift)30 +[0-9]"
  [ "${AB_CKKS:-1}" = 1 ] && timeout 120 python3 benchmarks/bench_ckks.py --key-switch-only --ks-limbs 48 2>&1 | tail -2
}
SKIP_TESTS=1 SKIP_BENCH=1 bash scripts/gpu_run.sh || exit 1
echo "== A (default build)"; bench A
timeout ${TEST_TIMEOUT:-150} python3 -m pytest -q -p no:cacheprovider -m "gpu and not slow" \
  tests/test_ntt.py tests/test_cross_backend.py 2>&1 | tail -3
export CMAKE_ARGS="-DCMAKE_CUDA_FLAGS=${AB_FLAGS:--DJAX_FHE_NTT_NO_TWIDDLE_PREFETCH}"
t0=$(date +%s)
python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build_b.log" 2>&1 || { tail -30 "$OUT/build_b.log"; exit 1; }
echo "== B ($CMAKE_ARGS; build $(( $(date +%s) - t0 )) s)"; bench B
