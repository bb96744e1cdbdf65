#!/usr/bin/env bash
# On the device machine (under scripts/gpu_prebuilt.sh): the cluster NTT's bits against a
# reference build (REF_SO, default bench_out/main21.so: carry it) under several runtime settings,
# then batch timings (NTT_BATCHES, default 16) of the settings given as arguments
# (space-separated VAR=value lists, "" = defaults).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
so=$(ls jax_fhe/_kernels*.so)
ref=/tmp/ntt_probe_ref.npz
cp "$so" /tmp/ntt_probe_new.so
cp "${REF_SO:-bench_out/main21.so}" "$so"
timeout 120 python3 tests/ntt_cluster_check.py --save "$ref"; echo "rc $? (reference build)"
cp /tmp/ntt_probe_new.so "$so"
for cfg in "JAX_FHE_NTT_TAIL=0" "" "JAX_FHE_NTT_TAIL=60"; do
  env $cfg timeout 120 python3 tests/ntt_cluster_check.py --save /tmp/ntt_probe_x.npz --against "$ref"
  echo "rc $? (${cfg:-defaults})"
done
NTT_BATCHES=${NTT_BATCHES:-16} bash scripts/ntt_variants.sh "$@"
