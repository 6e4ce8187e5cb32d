#!/usr/bin/env bash
# On the device (twenty-second session): the row path's loop split in two (prefix tiles compiled
# without the draft logic) against the tree before it (ab_old/, an untracked copy of HEAD's kgen
# and templates), alternating; the shipped configs, oracle-checked (bench/time_shipped.py).
# (What bench/ab.sh does for any trees; kept as the script that ran.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
C="kimi-tp8-verify-batch kimi-tp1-verify-tree kimi-tp8-verify-tree kimi-tp8-verify-tree:min_blocks=2 kimi-tp8-verify-batch:qk_ahead=0 kimi-tp1-batch dsv3-tp1-batch kimi-tp1-decode-64k dsv3-tp8-decode-long"
for round in 1 2; do
  PYTHONPATH=ab_old timeout 130 python3 ab_old/bench/time_shipped.py --reps 20 $C | sed 's/^/old /' >> "$out/ab.txt" 2>> "$out/ab.err"
  PYTHONPATH=. timeout 130 python3 bench/time_shipped.py --reps 20 $C | sed 's/^/new /' >> "$out/ab.txt" 2>> "$out/ab.err"
done
python3 - "$out/ab.txt" <<'PY'
import json, sys
t = {}
for line in open(sys.argv[1]):
    tree, js = line.split(" ", 1)
    r = json.loads(js)
    t.setdefault(r["case"], {}).setdefault(tree, []).append((r["status"], r["median_us"] and round(r["median_us"], 1)))
for case, v in t.items():
    print(f"{case:40} old {v.get('old')}  new {v.get('new')}")
PY
