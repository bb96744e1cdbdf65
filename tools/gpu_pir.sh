#!/usr/bin/env bash
# One device call for PIR: build (sm_90a), the PIR tests' GPU variants (exactness on the GPU),
# the full-size 1 GiB retrieval test on the GPU (slow; PIR_FULL_SIZE=0 skips it), then the
# per-stage profile (PIR_PROFILE_ARGS). Logs and JSON under $OUT.
set -uo pipefail
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
SKIP_TESTS=1 SKIP_BENCH=1 bash scripts/gpu_run.sh || exit 1
python3 -m pytest -q -x -p no:cacheprovider -m gpu tests/test_pir_protocols.py tests/test_exppack.py \
  tests/test_rlwe_pir.py tests/test_db_gemm.py 2>&1 | tee "$OUT/pytest_pir_gpu.log" | tail -4
if [ "${PIR_FULL_SIZE:-1}" = "1" ]; then
  python3 -m pytest -q -x -p no:cacheprovider -m slow -k "full_size_1gib and gpu and ${PIR_FULL_SIZE_PROTOCOLS:-hybrid}" \
    tests/test_pir_protocols.py 2>&1 | tee "$OUT/pytest_pir_full.log" | tail -3
fi
export XLA_PYTHON_CLIENT_MEM_FRACTION=${XLA_PYTHON_CLIENT_MEM_FRACTION:-0.9}
timeout ${PIR_TIMEOUT:-300} python3 benchmarks/profile_pir.py ${PIR_PROFILE_ARGS:---gib 16 --batches 1 32 --reps 2} \
  --out "$OUT/pir_stages.json" 2>&1 | tee "$OUT/pir_stages.log" | grep -v "^$" | tail -40
