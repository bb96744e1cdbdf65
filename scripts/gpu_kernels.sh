#!/usr/bin/env bash
# One device call for kernel work: build (sm_90a), the kernel tests on GPU, then NTT/BConv
# benchmarks at the sizes (L = 48 / 12 -> 48, batch 4 and 16) with a few tuning knobs
# swept (JAX_FHE_NTT_CLUSTER: the sm_90 single-pass kernel or the two-phase kernels;
# JAX_FHE_NTT_MAX_P, JAX_FHE_NTT_CHUNK_BYTES for the latter). Logs under $OUT.
set -uo pipefail
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
SKIP_BENCH=1 bash scripts/gpu_run.sh tests/test_ntt.py tests/test_bconv.py tests/test_cross_backend.py "$@" || exit 1
B="python3 benchmarks/bench_kernels.py --backend gpu"
# sweep: polynomials per thread x chunk bytes ("default" = the handler's choice)
for cl in ${NTT_CLUSTER_SWEEP:-0 1}; do
for c in ${NTT_CHUNK_SWEEP:-default}; do
  for p in ${NTT_P_SWEEP:-4}; do
    echo "== JAX_FHE_NTT_CLUSTER=$cl JAX_FHE_NTT_MAX_P=$p JAX_FHE_NTT_CHUNK_BYTES=$c"
    ( [ "$c" != default ] && export JAX_FHE_NTT_CHUNK_BYTES=$c
      JAX_FHE_NTT_CLUSTER=$cl JAX_FHE_NTT_MAX_P=$p $B --kernels ntt --limbs ${NTT_LIMBS:-48} --batches ${NTT_BATCHES:-4,16} 2>&1 | grep -E "^(ntt|intt)30 +[0-9]" )
  done
done
done
$B --kernels bconv --batches 4,16 --bconv-out 48 2>&1 | tee "$OUT/bconv.log" | grep -E "^bconv|copy bandwidth"
