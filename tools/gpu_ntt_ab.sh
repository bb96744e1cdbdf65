#!/usr/bin/env bash
# The NTT built several ways and run under several settings, measured in one device call.
# - $AB_VARIANTS: ";"-separated CUDA-flags variants (give a harmless define such as
#   -DAB_DEFAULT for the default build: an empty last field is dropped); each is a rebuild.
# - $AB_ENVS: ";"-separated runtime settings (VAR=value) for each build (default: none).
# - $AB_WIDTHS (default 30), $AB_BATCHES (default 1,16): the N = 2^16, L = 48 runs; PIR's ring
#   (N = 4096, L = 3) runs once per build unless AB_PIR=0.
# Then the GPU NTT tests on the last build (SKIP_TESTS=1 skips). Output streams line by line
# (a time-out keeps what was printed); logs under $OUT.
set -uo pipefail
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 JAX_FHE_CUDA=ON JAX_FHE_CUDA_GENCODE="-gencode=arch=compute_90a,code=sm_90a"
IFS=';' read -ra variants <<< "${AB_VARIANTS:--DAB_DEFAULT}"
IFS=';' read -ra envs <<< "${AB_ENVS:-AB_DEFAULT=1}"
IFS=',' read -ra widths <<< "${AB_WIDTHS:-30}"
i=0
for flags in "${variants[@]}"; do
  i=$((i + 1)); t0=$(date +%s)
  CMAKE_ARGS="-DCMAKE_CUDA_FLAGS='$flags'" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) python3 -m pip install --no-build-isolation --no-deps -e . \
    > "$OUT/build_$i.log" 2>&1 || { tail -30 "$OUT/build_$i.log"; exit 1; }
  echo "== variant $i: CUDA flags '$flags' (build $(( $(date +%s) - t0 )) s)"
  k=0
  for e in "${envs[@]}"; do
    k=$((k + 1))
    for w in "${widths[@]}"; do
      echo "-- $e, width $w"
      rm -rf /tmp/ab_trace_${i}_${k}_$w  # a trace left by an earlier call would be read instead
      env $e timeout 120 python3 benchmarks/bench_kernels.py --backend gpu --kernels ntt --limbs 48 \
        --width "$w" --batches "${AB_BATCHES:-1,16}" --trace /tmp/ab_trace_${i}_${k}_$w 2>&1 \
        | tee "$OUT/ntt_${i}_${k}_$w.log" | grep --line-buffered -E "^(ntt|intt)3[01] +[0-9]|copy bandwidth"
    done
  done
  if [ "${AB_PIR:-1}" != "0" ]; then
    rm -rf /tmp/ab_pir_$i
    timeout 90 python3 benchmarks/bench_kernels.py --backend gpu --kernels ntt,lift --log-n 12 --limbs 3 \
      --batches 20480 --trace /tmp/ab_pir_$i 2>&1 | tee "$OUT/pir_ntt_$i.log" | grep --line-buffered -E "^(ntt|intt|lift)30 +[0-9]"
  fi
done
if [ "${SKIP_TESTS:-0}" != "1" ]; then
  timeout ${TEST_TIMEOUT:-150} python3 -m pytest -q -p no:cacheprovider -m "gpu and not slow" \
    tests/test_ntt.py tests/test_cross_backend.py 2>&1 | tee "$OUT/pytest_ntt.log" | grep --line-buffered -E "passed|failed|FAILED|Error"
fi
