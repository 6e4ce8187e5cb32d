#!/usr/bin/env bash
# On the device (twenty-first session): the six sparse batch cases swept with the split softmax
# (every other axis open, the PDL merge on), to see whether other warp grids win now that the
# softmax is no longer repeated in every column group.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases=""
for c in dsv32-sparse-h16-b32 dsv32-sparse-h16-b128 dsv32-sparse-h16-verify dsv32-sparse-h64-b32 \
         dsv32-sparse-h64-b128 dsv32-sparse-h128-b32 dsv32-sparse-h128-b128; do cases="$cases --case $c"; done
timeout 560 python3 -m kgen sweep --grid kgen/tune/grid.json $cases --split-softmax 1 --pdl-combine 1 \
  --reps 10 --seconds 480 --db "$out/swept.json" --out /tmp/sweep-ss > "$out/sweep.log" 2>&1
echo "sweep exit $?"
grep -A12 "^case " "$out/sweep.log" | grep -v "^--" | tail -30
