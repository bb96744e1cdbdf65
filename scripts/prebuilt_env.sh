# Sourced by scripts/gpu_prebuilt.sh and `PREBUILT=1 scripts/gpu_run.sh` on the device machine:
# check that the kernels module built by scripts/build_device_kernels.sh was carried into
# jax_fhe/, and put the source tree first on PYTHONPATH so that it is the jax_fhe imported.
ls jax_fhe/_kernels.cpython-*.so > /dev/null 2>&1 || { echo "no carried jax_fhe/_kernels*.so (scripts/build_device_kernels.sh)"; exit 2; }
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# XLA's compiled programs persist on the warm device machine between calls (a warm call reuses the
# ResNet-20 stages' and the bootstrap's compilations instead of minutes of compiling again).
export JAX_COMPILATION_CACHE_DIR="${JAX_COMPILATION_CACHE_DIR:-$PWD/.jax_cache}"
