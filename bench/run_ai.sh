#!/usr/bin/env bash
# Ninth session: which half of branch merge-latency pays. main (hack/), the started-count read
# before the arrival fence alone (this tree: CHUNK 4), and with 8 partial loads in flight per
# thread (hack8/: CHUNK 8), rotating, two rounds, on the split-heavy cases' shipped configs.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/ai"; out=$(cd "$out" && pwd)
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases="kimi-tp8-decode-long dsv3-tp8-decode-long dsv3-tp8-decode-batch page1-decode kimi-tp1-decode
kimi-tp1-verify-tree dsv32-sparse-h16-b1 dsv32-sparse-h64-b1 dsv32-sparse-h128-b1 dsv32-sparse-h16-b32"
for round in 1 2; do
  for tree in hack . hack8; do
    name=$([ "$tree" = . ] && echo ov4 || echo "$tree")
    (cd "$tree" && PYTHONPATH=. timeout 120 python3 bench/time_shipped.py --reps 30 $cases > "$out/ai/$name-$round.jsonl" 2> "$out/ai/$name-$round.err")
    echo "$name $round exit $?"
  done
done
python3 - "$out/ai" <<'PY'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
rows = {}
for f in sorted(d.glob("*.jsonl")):
    for line in f.read_text().splitlines():
        r = json.loads(line)
        rows.setdefault(r["case"], {})[f.stem] = (r.get("median_us"), r["status"])
for case, t in rows.items():
    print(f"{case:24s}", " ".join(f"{k}={v[0]:.1f}" if v[0] else f"{k}={v[1]}" for k, v in sorted(t.items())))
PY
grep -h -i "Traceback" "$out"/ai/*.err | head -5
