# Sourced by scripts/gpu_prebuilt.sh and `PREBUILT=1 scripts/gpu_run.sh` on the device machine:
# check that the kernels module built by scripts/build_device_kernels.sh was carried into
# jax_fhe/, and put the source tree first on PYTHONPATH so that it is the jax_fhe imported.
ls jax_fhe/_kernels.cpython-*.so > /dev/null 2>&1 || { echo "no carried jax_fhe/_kernels*.so (scripts/build_device_kernels.sh)"; exit 2; }
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
