#!/usr/bin/env bash
# On the device machine (under scripts/gpu_prebuilt.sh): the bits of several builds of the kernels
# module against a baseline build, each with tools/ntt_cluster_check.py (--save under BASE, then
# --against under each build), one line per build. ntt_ab_bits.sh checks only the carried
# module; this checks every build named (carry them):
#   BASE=bench_out/base.so bash scripts/gpu_prebuilt.sh bash tools/ntt_bits_each.sh \
#       bench_out/a.so bench_out/b.so
# The carried module (jax_fhe/) is restored afterwards; "new" in the list means it. BASE may be a
# folder holding a whole package (BASE/jax_fhe with its module: a build whose Python differs from
# this tree's), which then runs first on PYTHONPATH (tools/ab_kernels.sh).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
SO=$(ls jax_fhe/_kernels*.so)
BASE=${BASE:?set BASE to the baseline build}
[ -e "$BASE" ] || { echo "baseline $BASE not found (carry it)" >&2; exit 2; }
keep=$(mktemp)
cp "$SO" "$keep"
if [ -d "$BASE" ]; then
  PYTHONPATH="$(cd "$BASE" && pwd)${PYTHONPATH:+:$PYTHONPATH}" python3 tools/ntt_cluster_check.py --save /tmp/ntt_each_ref.npz \
    > "$OUT/bits_ref.txt" 2>&1 || { echo "baseline save failed"; exit 1; }
else
  cp "$BASE" "$SO"
  python3 tools/ntt_cluster_check.py --save /tmp/ntt_each_ref.npz > "$OUT/bits_ref.txt" 2>&1 || { echo "baseline save failed"; cp "$keep" "$SO"; exit 1; }
fi
for b in "$@"; do
  if [ "$b" = new ]; then cp "$keep" "$SO"; else cp "$b" "$SO"; fi
  log="$OUT/bits_$(basename "$b" .so).txt"
  python3 tools/ntt_cluster_check.py --save /tmp/ntt_each_new.npz --against /tmp/ntt_each_ref.npz > "$log" 2>&1
  echo "$b: rc $? $(tail -1 "$log")"
done
cp "$keep" "$SO"
