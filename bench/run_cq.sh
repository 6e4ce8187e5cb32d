#!/usr/bin/env bash
# On the device (seventeenth session): the two entries closest to their targets timed three times
# at neighbouring split counts (median of 20 each): dsv3-tp8-decode-batch (target 90 us) and
# page1-decode (55 us), both specialised.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=()
for s in 2 3 4 6; do runs+=("dsv3-tp8-decode-batch:kv_splits=$s"); done
for s in 3 4 6 8; do runs+=("page1-decode:kv_splits=$s"); done
for round in 1 2 3; do
  timeout 150 python3 bench/time_shipped.py --reps 20 "${runs[@]}" >> "$out/splits.jsonl" 2>> "$out/splits.err"
done
python3 - "$out/splits.jsonl" <<'PY'
import json, sys, collections
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line); t[r["case"]].append(r["median_us"] or 0)
for case, us in t.items(): print(f"{case:40s} " + " ".join(f"{u:.1f}" for u in us))
PY
