#!/usr/bin/env bash
# On the device machine: SM clock, power and throttle reasons sampled by nvidia-smi while
# tools/ntt_clock_probe.py runs the NTT back to back. Arguments: as the .py's. Prints the
# samples' summary.
set -uo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader,nounits -lms 100 > "$log" &
smi=$!
python3 tools/ntt_clock_probe.py "$@"
kill $smi
python3 - "$log" <<'PY'
import sys, collections
rows = [l.split(", ") for l in open(sys.argv[1]) if l.strip()]
busy = [r for r in rows if float(r[2]) > 150]  # samples while the kernels ran
if not busy:
    print("no busy samples", rows[:5]); sys.exit()
sm = sorted(int(r[0]) for r in busy); pw = sorted(float(r[2]) for r in busy)
print(f"  {len(busy)} busy samples: SM clock MHz min {sm[0]} median {sm[len(sm)//2]} max {sm[-1]}; "
      f"power W median {pw[len(pw)//2]:.0f} max {pw[-1]:.0f}; mem clock {busy[0][1]}; "
      f"throttle reasons {collections.Counter(r[4].strip() for r in busy).most_common(3)}")
PY
