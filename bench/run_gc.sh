#!/usr/bin/env bash
# On the device (twenty-second session): every grid case's shipped config (oracle-checked) timed
# with L2 flushed by overwriting (kgen's figures) and by reading (L2 left clean), alternating
# (as many rounds as fit).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
C=$(python3 -c "import json; print(' '.join(c['name'] for c in json.load(open('kgen/tune/grid.json'))['cases']))")
python3 -c "import flashinfer" > /dev/null 2>&1 && echo "flashinfer present" || echo "no flashinfer here"
for step in write:210 read:150 write:110 read:90; do
  flush=${step%:*} seconds=${step#*:}
  timeout "$seconds" python3 bench/time_shipped.py --reps 20 --flush $flush $C >> "$out/flush.jsonl" 2>> "$out/flush.err"
  echo "$flush exit $?"
done
python3 - "$out/flush.jsonl" <<'PY' | tee "$out/flush_table.txt"
import json, sys, statistics
t = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("median_us") is not None:
        t.setdefault(r["case"], {}).setdefault(r["flush"], []).append(r["median_us"])
print(f"{'case':28} {'write us':>16} {'read us':>16} {'diff':>6}")
for case, f in t.items():
    w, rd = f.get("write", []), f.get("read", [])
    fmt = lambda v: "/".join(f"{x:.1f}" for x in v)
    d = statistics.median(w) - statistics.median(rd) if w and rd else float("nan")
    print(f"{case:28} {fmt(w):>16} {fmt(rd):>16} {d:6.1f}")
PY
