#!/usr/bin/env bash
# On the device (twenty-fifth session, call 7): dsv32-sparse-h128-b1 (15 us target, shipped 16.4)
# around its shipped config: split counts, 16-position tiles two blocks an SM, 32-head blocks.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
R=dsv32-sparse-h128-b1
cases=($R $R:kv_splits=12 $R:kv_splits=14 $R:gather_bytes=8
  $R:block_n=16 $R:block_n=16,kv_splits=24 $R:block_n=16,kv_splits=32 $R:block_n=16,kv_splits=33
  $R:heads_per_block=32,kv_splits=32,col_groups=4 $R:heads_per_block=32,kv_splits=33,col_groups=4)
for round in 1 2; do
  timeout 200 python3 bench/time_shipped.py --reps 30 "${cases[@]}" > "$out/h128b1-$round.jsonl" 2> "$out/h128b1-$round.err"
  echo "round $round exit $?"
done
python3 - "$out" <<'PY'
import json, sys, glob, collections
t = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/h128b1-*.jsonl")):
    for line in open(f):
        r = json.loads(line); t[r["case"] + " " + r["config"]].append(round(r["median_us"], 2))
for k, v in t.items(): print(f"{k:90s} {v}")
PY
