#!/usr/bin/env bash
# One device call: build, run the whole test suite on the GPU, then the kernel benchmarks.
# Logs and JSON go to $OUT (the device tool copies them back). Usage on the GPU machine:
#   bash scripts/gpu_run.sh [pytest-args...]
# PREBUILT=1 skips the build and uses the carried module (scripts/build_device_kernels.sh).
set -uo pipefail
OUT=${OUT:-./gpu_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/nvidia-smi.txt"
# sm_90a only on the device machine: it is all we run there, and it keeps the build short.
export JAX_FHE_CUDA=ON JAX_FHE_CUDA_GENCODE="-gencode=arch=compute_90a,code=sm_90a"
t0=$(date +%s)
if [ "${PREBUILT:-0}" = "1" ]; then
  . scripts/prebuilt_env.sh
else
  python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
  echo "build: $(( $(date +%s) - t0 )) s"
fi
python3 -c "import jax, jax_fhe; print(jax.__version__, jax.devices(), 'cuda kernels:', jax_fhe.built_with_cuda(), 'gpu:', jax_fhe.gpu_available())"
if [ "${SKIP_TESTS:-0}" != "1" ]; then
  python3 -m pytest -q -x -p no:cacheprovider "$@" 2>&1 | tee "$OUT/pytest.log" | tail -25
fi
if [ "${SKIP_BENCH:-0}" != "1" ]; then
  python3 benchmarks/bench_kernels.py --backend gpu --width 30 --out "$OUT/bench_kernels_gpu30.json" 2>&1 | tee "$OUT/bench30.log" | tail -42
  python3 benchmarks/bench_kernels.py --backend gpu --width 31 --kernels ntt --out "$OUT/bench_kernels_gpu31.json" 2>&1 | tee "$OUT/bench31.log" | grep -E "^(ntt|intt)"
fi
