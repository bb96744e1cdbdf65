#!/usr/bin/env bash
# On the device machine: the same command under several builds of the kernels module,
# alternating, so that changes are measured against each other in one call (same GPU, same
# clocks). "new" is the module carried in jax_fhe/; the others are the files given, comma-separated
# (carry them too, e.g. builds copied to bench_out/, which git ignores), each named after its file:
#   bash scripts/gpu_prebuilt.sh bash tools/ab_kernels.sh bench_out/base_kernels.so 2 \
#       bash tools/ks_variants.sh ""
#   NTT_BATCHES=16 bash scripts/gpu_prebuilt.sh bash tools/ab_kernels.sh \
#       bench_out/quarters.so,bench_out/direct.so 2 bash tools/ntt_variants.sh ""
# An entry ending in .tar.xz stands for every .so in that archive (the carry limit, 64 MiB, holds
# four builds; an xz archive of similar builds about two more each: session 29 carried seven in 28 MB):
#   tar cJf bench_out/pack.tar.xz -C bench_out a.so b.so c.so
# An entry that is a folder holds a whole package (DIR/jax_fhe, its Python and its module), for a
# build whose Python differs from this tree's (its FFI operands changed): the command runs with
# DIR first on PYTHONPATH instead, e.g. a copy of main's jax_fhe/ with main's module:
#   bash scripts/gpu_prebuilt.sh bash tools/ab_kernels.sh bench_out/main_pkg 2 bash tools/ntt_variants.sh ""
set -uo pipefail
cd "$(dirname "$0")/.."
bases=$1 rounds=$2
shift 2
list=""
for b in ${bases//,/ }; do
  if [[ $b == *.tar.xz ]]; then
    dir=$(mktemp -d)
    tar xJf "$b" -C "$dir" || exit 2
    list="$list $(ls "$dir"/*.so | tr '\n' ' ')"
  else
    list="$list $b"
  fi
done
so=$(ls jax_fhe/_kernels*.so)
keep=$(mktemp)
cp "$so" "$keep"
for r in $(seq "$rounds"); do
  for b in new $list; do
    pp=${PYTHONPATH:-}
    if [ "$b" = new ]; then v=new; cp "$keep" "$so"
    elif [ -d "$b" ]; then v=$(basename "$b"); cp "$keep" "$so"; pp="$(cd "$b" && pwd)${pp:+:$pp}"
    else v=$(basename "$b" .so); cp "$b" "$so"; fi
    echo "##### round $r: $v"
    PYTHONPATH=$pp AB_BUILD=$v AB_ROUND=$r "$@"  # the command can name its logs after them
  done
done
cp "$keep" "$so"
