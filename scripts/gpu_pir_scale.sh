#!/usr/bin/env bash
# One device call for PIR at scale (issue #43): build, the PIR memory/chunking tests on the GPU,
# then the benchmark for one machine kind. Logs, JSON and the results file go to $OUT.
#   bash scripts/gpu_pir_scale.sh h200     # one H200: 64 GiB hybrid + double, batch 1 and 32, 128-query long run
#   bash scripts/gpu_pir_scale.sh h200-double   # one H200: 64 GiB double-packing, the same
#   bash scripts/gpu_pir_scale.sh h100     # one H100 80GB: 16 GiB hybrid batch 32 (no OOM at JAX defaults), 10^4 queries in a row
#   bash scripts/gpu_pir_scale.sh x2       # two GPUs: 64 GiB hybrid batch 32 sharded (and batch 1)
#   bash scripts/gpu_pir_scale.sh x4       # four GPUs: the same over 4
# PREBUILT=1 skips the build (scripts/build_device_kernels.sh). No XLA_FLAGS and no
# XLA_PYTHON_CLIENT_MEM_FRACTION: the plan must fit JAX's defaults with autotuning on.
# EMULATE_H100=1 on H200s: JAX may use what it would on an H100 80GB at its defaults
# (0.75 x 79.6 GiB = 59.7 GiB = 0.425 of an H200's 140.4 GiB), for the H100 rows.
set -uo pipefail
OUT=${OUT:-./gpu_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
unset XLA_FLAGS XLA_PYTHON_CLIENT_MEM_FRACTION XLA_PYTHON_CLIENT_PREALLOCATE
if [ "${EMULATE_H100:-0}" = "1" ]; then export XLA_PYTHON_CLIENT_MEM_FRACTION=0.425; fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/nvidia-smi.txt"
export JAX_FHE_CUDA=ON JAX_FHE_CUDA_GENCODE="-gencode=arch=compute_90a,code=sm_90a"
if [ "${PREBUILT:-0}" = "1" ]; then
  . scripts/prebuilt_env.sh
else
  python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
fi
(cd tests && timeout 400 python3 -m pytest -q -x test_pir_memory.py -m "slow or not slow" -k "gpu or plan or bench" 2>&1 | tail -15) | tee "$OUT/tests.log"
B="python3 benchmarks/bench_pir.py"
R="--results $OUT/pir.json"
cp benchmarks/results/pir.json "$OUT/pir.json"
case "${1:-h200}" in
  h200)
    timeout 540 $B --db-gib 64 --protocols hybrid --batches 1 32 --reps 5 --long-run 128 $R --out "$OUT/hybrid64.json" 2>&1 | tee "$OUT/hybrid64.log"
    ;;
  h200-double)
    timeout 540 $B --db-gib 64 --protocols double --batches 1 32 --reps 5 --long-run 128 $R --out "$OUT/double64.json" 2>&1 | tee "$OUT/double64.log"
    ;;
  h100)
    timeout 540 $B --db-gib 16 --protocols hybrid --batches 32 1 --reps 5 --long-run 10000 $R --out "$OUT/hybrid16.json" 2>&1 | tee "$OUT/hybrid16.log"
    ;;
  x2|x4)
    d=${1#x}
    timeout 540 $B --db-gib 64 --protocols hybrid --batches 32 1 --reps 5 --devices "$d" --long-run 128 $R --out "$OUT/hybrid64_d$d.json" 2>&1 | tee "$OUT/hybrid64_d$d.log"
    ;;
  *) echo "unknown mode $1" >&2; exit 2 ;;
esac
nvidia-smi --query-gpu=memory.used,memory.total --format=csv | tee -a "$OUT/nvidia-smi.txt"
