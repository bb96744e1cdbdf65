#!/usr/bin/env bash
# On the device machine: the same command under two builds of the kernels module, alternating,
# so that a change is measured against its baseline in one call (same GPU, same clocks).
# "new" is the module carried in jax_fhe/; "base" is the file given (carry it too, e.g. a build
# of the previous commit copied to bench_out/base_kernels.so, which git ignores):
#   bash scripts/gpu_prebuilt.sh bash scripts/ab_kernels.sh bench_out/base_kernels.so 2 \
#       bash scripts/ks_variants.sh ""
set -uo pipefail
cd "$(dirname "$0")/.."
base=$1 rounds=$2
shift 2
so=$(ls jax_fhe/_kernels*.so)
keep=$(mktemp)
cp "$so" "$keep"
for r in $(seq "$rounds"); do
  for v in new base; do
    if [ "$v" = new ]; then cp "$keep" "$so"; else cp "$base" "$so"; fi
    echo "##### round $r: $v"
    AB_BUILD=$v AB_ROUND=$r "$@"  # the command can name its logs after them
  done
done
cp "$keep" "$so"
