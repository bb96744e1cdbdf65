#!/usr/bin/env bash
# On the device machine (under scripts/gpu_prebuilt.sh): a candidate kernels module against a
# baseline build in one call. The candidate is the module carried in jax_fhe/; the baseline a
# build copied to bench_out/ (git ignores it; carry it too):
#   1. bits: tools/ntt_bits_each.sh for the candidate (tools/ntt_cluster_check.py --save under
#      the baseline, then --against it under the candidate; exit status and last line printed);
#   2. timing: tools/ab_kernels.sh alternating the two builds ROUNDS times (default 3) over
#      tools/ntt_variants.sh at NTT_BATCHES (default 16), then one line per log: the N = 2^16,
#      L = 48 forward and inverse device µs and % of copy.
# Usage (session 23):
#   run(command="BASE=bench_out/main23b.so bash scripts/gpu_prebuilt.sh bash scripts/ntt_ab_bits.sh",
#       carry=["jax_fhe/_kernels.cpython-312-x86_64-linux-gnu.so", "bench_out/main23b.so"])
# with BASE=bench_out/<baseline>.so (required: a missing baseline would compare the candidate
# with itself), or a folder holding a whole package for a build whose Python differs from this
# tree's (BASE=bench_out/main_pkg: main's jax_fhe/ with main's module; tools/ab_kernels.sh). AB="a.so,b.so" times more builds against the candidate (bits: BASE only).
# Arguments, if any, are further runtime variants for every build (ntt_variants.sh settings,
# VAR=value settings); their logs end in v2, v3, ...
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
BASE=${BASE:?set BASE to the baseline build, e.g. BASE=bench_out/main.so}
[ -e "$BASE" ] || { echo "baseline $BASE not found (carry it)" >&2; exit 2; }
OUT="$OUT" BASE="$BASE" bash tools/ntt_bits_each.sh new  # (bits_ref.txt, bits_new.txt)
NTT_BATCHES=${NTT_BATCHES:-16} bash tools/ab_kernels.sh "${AB:-$BASE}" "${ROUNDS:-3}" bash tools/ntt_variants.sh "" "$@" > "$OUT/ab.txt" 2>&1
cd "$OUT" && grep -h "copy bandwidth" ntt_*.log | head -1
for f in ntt_*.log; do
  # the table rows (not the prose lines of the same name): device µs, % of copy
  echo "$f $(grep -E '^i?ntt30 +[0-9]' "$f" | awk '{print $1, $9, $10}' | tr '\n' ' ')"
done
