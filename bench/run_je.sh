#!/usr/bin/env bash
# On the device (twenty-fifth session, call 5): rows per KV tile at equal occupancy (8 warps per
# SM): 16-row 4-warp blocks two per SM (min_blocks 2) against 32-row 8-warp blocks one per SM
# (each KV tile read once for twice the rows); the shipped 12-warp configs beside them.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases=(dsv3-tp1-batch dsv3-tp1-batch:min_blocks=2,kv_splits=4
  dsv3-tp1-batch:heads_per_block=32,num_warps=8,kv_splits=4,min_blocks=1
  dsv3-tp1-batch:heads_per_block=32,num_warps=8,kv_splits=4,min_blocks=1,qk_ahead=0
  kimi-tp1-batch kimi-tp1-batch:min_blocks=2,kv_splits=4
  kimi-tp1-batch:heads_per_block=32,num_warps=8,kv_splits=4,min_blocks=1
  kimi-tp1-verify-tree kimi-tp1-verify-tree:min_blocks=2,kv_splits=4
  kimi-tp1-verify-tree:heads_per_block=2,num_warps=8,kv_splits=4,min_blocks=1)
for round in 1 2; do
  timeout 200 python3 bench/time_shipped.py --reps 20 "${cases[@]}" > "$out/rows-$round.jsonl" 2> "$out/rows-$round.err"
  echo "round $round exit $?"
done
python3 - "$out" <<'PY'
import json, sys, glob, collections
t = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/rows-*.jsonl")):
    for line in open(f):
        r = json.loads(line); t[r["case"] + " " + r["config"]].append(round(r["median_us"], 1))
for k, v in t.items(): print(f"{k:85s} {v}")
PY
