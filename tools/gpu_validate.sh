#!/usr/bin/env bash
# One device call that validates on the GPU the code written without one, then measures it:
#   1. build (sm_90a) and the GPU variants of the tests that cover the new kernels
#      (VALIDATE_TESTS; default: NTT incl. ntt_lift, the key inner product, the CPU-vs-GPU NTT
#      paths, RLWE-PIR, PIR protocols; -m "gpu and not slow");
#   2. the PIR stage profile at 16 GiB, batches 32 and 1 (SKIP_PIR=1 skips; PIR_PROFILE_ARGS);
#   3. the NTT at L = 48 (SKIP_NTT=1 skips);
#   3b. NTT, INTT and the lifted NTT at N = 4096, L = 3 (PIR's ring; SKIP_PIR_NTT=1 skips);
#   4. BConv 12 -> 48 at batches 4 and 16 with each kernel's traced device time (SKIP_BCONV=1);
#   5. the CKKS benchmark with the GPU kernels of each key switch (SKIP_CKKS=1 skips).
# Logs under $OUT. Extra args go to pytest. All five parts take more than one call's 10 minutes
# (build ~160 s, tests ~230 s, PIR ~110 s, NTT ~45 s, CKKS ~100 s): run it twice, e.g.
#   SKIP_NTT=1 SKIP_CKKS=1 bash tools/gpu_validate.sh      # tests + PIR
#   SKIP_TESTS=1 SKIP_PIR=1 bash tools/gpu_validate.sh     # NTT + CKKS (warm: quick rebuild)
set -uo pipefail
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
SKIP_TESTS=1 SKIP_BENCH=1 bash scripts/gpu_run.sh || exit 1
TESTS=${VALIDATE_TESTS:-tests/test_ntt.py tests/test_cross_backend.py tests/test_key_product.py tests/test_rlwe_pir.py tests/test_pir_protocols.py}
if [ "${SKIP_TESTS:-0}" != "1" ]; then
  timeout ${TEST_TIMEOUT:-300} python3 -m pytest -q -p no:cacheprovider -m "gpu and not slow" $TESTS "$@" 2>&1 \
    | tee "$OUT/pytest_validate.log" | grep -E "passed|failed|FAILED|Error" | tail -15
fi
if [ "${SKIP_PIR:-0}" != "1" ]; then
  XLA_PYTHON_CLIENT_MEM_FRACTION=0.9 timeout ${PIR_TIMEOUT:-200} \
    python3 benchmarks/profile_pir.py ${PIR_PROFILE_ARGS:---gib 16 --batches 32 1 --reps 2} \
    --out "$OUT/pir.json" 2>&1 | tee "$OUT/pir.log" | grep -v "^$\|bfc_allocator" | tail -24
fi
if [ "${SKIP_NTT:-0}" != "1" ]; then
  echo "== NTT"
  timeout 90 python3 benchmarks/bench_kernels.py --backend gpu --kernels ntt --limbs 48 \
    --batches ${NTT_BATCHES:-1,16} --trace /tmp/ntt_trace 2>&1 | grep -E "^(ntt|intt)30 +[0-9]|copy bandwidth|trace:"
fi
if [ "${SKIP_PIR_NTT:-0}" != "1" ]; then
  echo "== N = 4096, L = 3 (the PIR ring): NTT, INTT and the lifted NTT of gadget digits"
  timeout 120 python3 benchmarks/bench_kernels.py --backend gpu --kernels ntt,lift --log-n 12 --limbs 3 \
    --batches ${PIR_NTT_BATCHES:-1024,20480} --trace /tmp/pir_ntt_trace 2>&1 | grep -E "^(ntt|intt|lift)30 +[0-9]|copy bandwidth|trace:"
fi
if [ "${SKIP_BCONV:-0}" != "1" ]; then
  echo "== BConv 12 -> 48"
  timeout 90 python3 benchmarks/bench_kernels.py --backend gpu --kernels bconv --bconv-out 48 \
    --batches ${BCONV_BATCHES:-4,16} --trace /tmp/bconv_trace 2>&1 | grep -E "^bconv|copy bandwidth|trace:"
fi
if [ "${SKIP_CKKS:-0}" != "1" ]; then
  timeout ${CKKS_TIMEOUT:-150} python3 benchmarks/bench_ckks.py --batch 8 --trace /tmp/ckks_trace --out "$OUT/ckks.json" 2>&1 \
    | tee "$OUT/ckks.log" | tail -80
fi
