#!/usr/bin/env bash
# On the device (nineteenth session): seed-fp32-verify swept on the tiled path again with the
# two-whole-waves split candidate (33 for its 8 blocks a split; the tiled kernel is unchanged),
# for its tuning entry; the heuristic default (now 33 splits) timed beside the old 16.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 300 python3 -m kgen sweep --grid kgen/tune/grid.json --case seed-fp32-verify --compute tiled \
  --heads-per-block 8 4 --reps 10 --db "$out/tiled-db.json" --out /tmp/sweep > "$out/sweep.log" 2>&1
echo "sweep exit $?"; grep -A4 "^case" "$out/sweep.log"; rm -f "$out"/*.lock
timeout 100 python3 bench/time_shipped.py --reps 20 --default seed-fp32-verify seed-fp32-verify:kv_splits=16 \
  > "$out/default.jsonl" 2> "$out/default.err"
cat "$out/default.jsonl"
