#!/usr/bin/env bash
# On the device machine (under scripts/gpu_prebuilt.sh): the NTT at L = 48 (scripts/ntt_variants.sh,
# NTT_BATCHES, default 16) under several builds of the kernels module, alternating for ROUNDS
# rounds (default 2) so that they share the GPU and its clocks. Builds are .so files carried in
# bench_out/ (git ignores it), named without the extension; VARIANTS the ntt_variants arguments
# (default: the defaults). Restores the carried module at the end.
#   ROUNDS=2 bash scripts/gpu_prebuilt.sh bash scripts/ab_builds.sh head new
set -uo pipefail
cd "$(dirname "$0")/.."
so=$(ls jax_fhe/_kernels*.so)
keep=$(mktemp)
cp "$so" "$keep"
for r in $(seq "${ROUNDS:-2}"); do
  for b in "$@"; do
    cp "bench_out/$b.so" "$so"
    echo "## round $r: $b"
    AB_BUILD=$b AB_ROUND=$r NTT_BATCHES=${NTT_BATCHES:-16} bash scripts/ntt_variants.sh "${VARIANTS:-}" | grep -E "^i?ntt3[01] "
  done
done
cp "$keep" "$so"
