#!/usr/bin/env bash
# On the device machine (after scripts/prebuilt_env.sh or an install): the (48, 12, 4) key
# switch under runtime variants, one log and one trace folder per variant under $OUT.
#   bash scripts/gpu_prebuilt.sh bash tools/ks_variants.sh "" "JAX_FHE_FUSED_KEY_PRODUCT_NTT=0" ...
# KS_LIMBS (default 48; e.g. 48,24,12) and KS_BATCH (default 8) pass through to bench_ckks.py.
# Each argument is a space-separated list of VAR=value settings ("" = defaults).
set -uo pipefail
cd "$(dirname "$0")/.."
i=0
for cfg in "$@"; do
  i=$((i + 1))
  echo "=== variant $i: ${cfg:-defaults}"
  rm -rf "$OUT/trace_v$i"  # a trace left by an earlier run (ab_kernels.sh) would be read instead
  env $cfg python3 benchmarks/bench_ckks.py --key-switch-only --ks-limbs "${KS_LIMBS:-48}" \
      --batch "${KS_BATCH:-8}" --trace "$OUT/trace_v$i" > "$OUT/ks_v$i.log" 2>&1
  echo "rc $?"
  grep -E "^\(|GPU kernels" "$OUT/ks_v$i.log"
done
