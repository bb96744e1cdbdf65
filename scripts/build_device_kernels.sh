#!/usr/bin/env bash
# Build the compiled kernels here for the device machine's Python (3.12, jax 0.11.2) and sm_90a,
# and put the module in jax_fhe/ (ignored by git) so that a device call can carry it instead of
# building there (a fresh build on the device machine took 390-550 s in session 8; this one is
# incremental here). Needs a Python 3.12 virtual environment with jax/jaxlib 0.11.2, nanobind
# and scikit-build-core: $DEVICE_VENV (default /tmp/v312). Then, for example:
#   run(command="bash scripts/gpu_prebuilt.sh pytest tests/test_ntt.py",
#       carry=["jax_fhe/_kernels.cpython-312-x86_64-linux-gnu.so"])
set -euo pipefail
VENV=${DEVICE_VENV:-/tmp/v312}
cd "$(dirname "$0")/.."
rm -rf /tmp/jax_fhe_device_wheel
JAX_FHE_CUDA=ON JAX_FHE_CUDA_GENCODE="-gencode=arch=compute_90a,code=sm_90a ${DEVICE_NVCC_EXTRA:-}" \
  "$VENV/bin/pip" wheel -q --no-build-isolation --no-deps . -w /tmp/jax_fhe_device_wheel
python3 - <<'PY'
import glob, zipfile
whl = glob.glob("/tmp/jax_fhe_device_wheel/jax_fhe-*.whl")[0]
with zipfile.ZipFile(whl) as z:
    name = next(n for n in z.namelist() if n.startswith("jax_fhe/_kernels") and n.endswith(".so"))
    open(name, "wb").write(z.read(name))
    print("wrote", name)
PY
