#!/usr/bin/env bash
# On the device (twenty-first session): the three sparse B = 1 cases swept with split_softmax open
# (every axis, PDL merge on), and the ten shipped sparse entries re-timed from the final database.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 300 python3 -m kgen sweep --grid kgen/tune/grid.json --case dsv32-sparse-h16-b1 \
  --case dsv32-sparse-h64-b1 --case dsv32-sparse-h128-b1 --split-softmax 0 1 --pdl-combine 1 \
  --reps 20 --db "$out/b1.json" --out /tmp/sweep-b1 > "$out/sweep_b1.log" 2>&1
echo "sweep exit $?"; grep -E " best | default " "$out/sweep_b1.log"
timeout 200 python3 bench/time_shipped.py --reps 30 dsv32-sparse-h16-b1 dsv32-sparse-h16-b32 \
  dsv32-sparse-h16-b128 dsv32-sparse-h16-verify dsv32-sparse-h64-b1 dsv32-sparse-h64-b32 \
  dsv32-sparse-h64-b128 dsv32-sparse-h128-b1 dsv32-sparse-h128-b32 dsv32-sparse-h128-b128 \
  > "$out/shipped.jsonl" 2> "$out/shipped.err"; echo "shipped exit $?"
python3 -c "
import json
for l in open('$out/shipped.jsonl'):
    r = json.loads(l)
    if 'case' in r: print(r['case'], r['config'], r.get('splits'), r['status'], round(r['median_us'], 2))
"
