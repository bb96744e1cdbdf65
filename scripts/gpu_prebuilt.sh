#!/usr/bin/env bash
# On the device machine: use the kernels module carried in jax_fhe/ (scripts/build_device_kernels.sh
# builds it here) instead of building, then run the given command, e.g.
#   bash scripts/gpu_prebuilt.sh python3 benchmarks/bench_kernels.py --backend gpu --kernels ntt
#   bash scripts/gpu_prebuilt.sh pytest -q -m "gpu and not slow" tests/test_ntt.py
# "pytest" runs as python3 -m pytest. Output goes to stdout; write logs under $OUT yourself.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/prebuilt_env.sh
export PYTHONUNBUFFERED=1
python3 -c "import jax, jax_fhe; print('jax', jax.__version__, jax.devices(), 'cuda kernels:', jax_fhe.built_with_cuda(), 'gpu:', jax_fhe.gpu_available())" || exit 3
if [ "${1:-}" = "pytest" ]; then shift; exec python3 -m pytest -p no:cacheprovider "$@"; fi
exec "$@"
