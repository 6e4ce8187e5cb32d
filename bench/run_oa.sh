#!/usr/bin/env bash
# On the device (twenty-ninth session, call 1): the fused merge as a barrier of the group's blocks
# and a static piece each (knock-in gridbar, bench/knockout.py) against the shipped PDL merge and
# the fused merge as it is, on the cases whose grid fits the GPU at once; results checked against
# the unedited kernel after the timed launches. Two rounds alternating.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > "$out/gpu.txt"
runs=""
for round in 1 2; do
  for c in kimi-tp8-decode-long kimi-tp1-decode kimi-tp1-decode-64k kimi-tp8-verify-tree dsv3-tp8-decode-batch; do
    runs="$runs $c $c:pdl_combine=0 $c:pdl_combine=0@gridbar"
  done
done
timeout 500 python3 bench/knockout.py --check --reps 30 $runs > "$out/gridbar.txt" 2> "$out/gridbar.err"
echo "exit $?"; tail -3 "$out/gridbar.err" | cut -c1-300; cat "$out/gridbar.txt"
