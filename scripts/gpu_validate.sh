#!/usr/bin/env bash
# One device call that validates on the GPU the code written without one: the GPU variants of
# the tests for the fused packing GEMM, the fused centred base conversion (if present), the NTT
# variants (cluster kernel included) and CKKS key switching, then the fused-GEMM PIR profile at
# 16 GiB (JAX_FHE_PIR_FUSED_GEMM=1). Logs under $OUT. Extra args go to pytest.
set -uo pipefail
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
SKIP_TESTS=1 SKIP_BENCH=1 bash scripts/gpu_run.sh || exit 1
TESTS="tests/test_bconv.py tests/test_exppack.py tests/test_cross_backend.py tests/test_ckks_hybrid.py tests/test_ckks_ops.py"
[ -f tests/test_bconv_centered.py ] && TESTS="$TESTS tests/test_bconv_centered.py"
python3 -m pytest -q -p no:cacheprovider -m gpu $TESTS "$@" 2>&1 | tee "$OUT/pytest_validate.log" | tail -6
python3 -m pytest -q -p no:cacheprovider -m gpu -k "fused" tests/test_pir_protocols.py 2>&1 | tee -a "$OUT/pytest_validate.log" | tail -3
if [ "${SKIP_PIR:-0}" != "1" ]; then
  XLA_PYTHON_CLIENT_MEM_FRACTION=0.9 JAX_FHE_PIR_FUSED_GEMM=1 timeout ${PIR_TIMEOUT:-240} \
    python3 benchmarks/profile_pir.py ${PIR_PROFILE_ARGS:---gib 16 --batches 32 1 --reps 2} \
    --out "$OUT/pir_fused.json" 2>&1 | tee "$OUT/pir_fused.log" | grep -v "^$" | tail -30
fi
