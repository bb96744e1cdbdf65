#!/usr/bin/env bash
# On the device machine (under scripts/gpu_prebuilt.sh, or with the carried kernels module): the
# ResNet-20 benchmark (latency with its split, then the encrypted accuracy from image START on,
# the JSON rewritten every 16 images), log and JSON under $OUT. One 600 s device call covers the
# setup (keys, diagonals, first-call compilation) and about 100-200 images; the next call
# continues at the first image the JSON lacks, and --combine joins the parts:
#   START=0 TAG=a bash tools/resnet_gpu.sh; START=<a.json's start + images> TAG=b bash tools/resnet_gpu.sh
#   python benchmarks/bench_resnet20.py --combine resnet_a.json resnet_b.json ...
# RESNET_ARGS adds options (--act, --margin, --diagonals, --batch, --mode).
set -u
cd "$(dirname "$0")/.."
. scripts/prebuilt_env.sh
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# every layer's diagonals encoded peaked at 69.8 GiB (H200, 2026-11-29): above JAX's default limit
# (75% of the memory) on an 80 GB H100, below 92% of it
export XLA_PYTHON_CLIENT_MEM_FRACTION=${XLA_PYTHON_CLIENT_MEM_FRACTION:-0.92}
timeout ${RESNET_TIMEOUT:-570} python3 benchmarks/bench_resnet20.py --runs ${RUNS:-3} --start ${START:-0} \
  --images ${IMAGES:-512} --out "$OUT/resnet${TAG:-}.json" ${RESNET_ARGS:-} 2>&1 \
  | tr '\r' '\n' | grep -v -E "(key|layer)/s\]|s/(key|layer)\]" > "$OUT/resnet${TAG:-}.log"
echo "rc=${PIPESTATUS[0]}" >> "$OUT/resnet${TAG:-}.log"
