#!/usr/bin/env bash
# Before the kernel pruning: time the default NTT against each variant the pruning deletes whose
# only evidence is an H100 measurement, on main's build before the pruning (7dfb450's ffi/, whose
# environment knobs select the variants; on a later build every variant runs the default path),
# so that the deletions can be checked on an H200. Run on the device machine with main's module
# carried (scripts/build_device_kernels.sh builds it), e.g.
#   run(command="bash scripts/gpu_prebuilt.sh bash tools/ntt_h200_check.sh",
#       carry=["jax_fhe/_kernels.cpython-312-x86_64-linux-gnu.so"], needs_h200=true)
# VARIANTS (optional) picks a subset by name; logs go to $OUT (default bench_out/h200_check).
# Main's Python can come from a folder holding main's package and module instead of a checkout:
#   run(command="PYTHONPATH=$PWD/bench_out/main_pkg bash tools/ntt_h200_check.sh", ...)
# (not under gpu_prebuilt.sh, which puts this tree first on PYTHONPATH). All of it takes more
# than one call's 10 minutes: split it with VARIANTS and SKIP_4096=1.
# Each variant is one bench_kernels.py process (L = 48, batches 16 and 64, device time by trace);
# "default" runs first and again last, to bracket the drift within the call. Prints one summary
# line per (variant, kernel, batch): wall us and device us.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench_out/h200_check}
mkdir -p "$OUT"
declare -A ENV=(
  [default]=""
  [two-phase]="JAX_FHE_NTT_CLUSTER=0"                         # reference (kept: < 128 polynomials)
  [halves]="JAX_FHE_NTT_CLUSTER=2"                             # cluster halves form, bulk row tables
  [halves-gather]="JAX_FHE_NTT_CLUSTER=2 JAX_FHE_NTT_ROW_BULK=0"  # halves form, gathered row tables
  [cluster-8]="JAX_FHE_NTT_CLUSTER=8"                          # 8 slices on clusters of 8 CTAs
  [cluster-16]="JAX_FHE_NTT_CLUSTER=16"                        # 16 slices on clusters of 16 CTAs
  [streamed]="JAX_FHE_NTT_CLUSTER=0 JAX_FHE_NTT_STREAM=1"      # streamed whole transform
  [chunked]="JAX_FHE_NTT_CLUSTER=0 JAX_FHE_NTT_CHUNK_BYTES=12582912"  # two phases per 12 MB chunk
)
ORDER=${VARIANTS:-"default halves halves-gather cluster-8 cluster-16 streamed chunked two-phase default"}
python3 -c "import jax; print(jax.devices()[0].device_kind)" | tee "$OUT/device.txt"
i=0
for v in $ORDER; do
  i=$((i + 1))
  log="$OUT/$i-$v.log"
  echo "== $v: ${ENV[$v]:-(none)}"
  env ${ENV[$v]} timeout 300 python3 benchmarks/bench_kernels.py --backend gpu --kernels ntt \
    --limbs 48 --batches 16,64 --trace "$OUT/trace_$i" > "$log" 2>&1 || echo "   (exit $?; see $log)"
  grep -E "^i?ntt30 N=2\^16" "$log" | sed "s/^/   $v: /"
done
# the one-block kernel (N <= 2^12) against the two phases there: N = 4096, L = 3 (SKIP_4096=1 skips)
[ "${SKIP_4096:-0}" = 1 ] && exit 0
for v in default whole-off; do
  e=""; [ "$v" = whole-off ] && e="JAX_FHE_NTT_WHOLE=0"
  echo "== N=4096 $v: ${e:-(none)}"
  env $e timeout 300 python3 benchmarks/bench_kernels.py --backend gpu --kernels ntt --log-n 12 \
    --limbs 3 --batches 64,4096 --trace "$OUT/trace_4096_$v" > "$OUT/n4096-$v.log" 2>&1 || echo "   (exit $?)"
  grep -E "^i?ntt30 N=2\^12" "$OUT/n4096-$v.log" | sed "s/^/   $v: /"
done
