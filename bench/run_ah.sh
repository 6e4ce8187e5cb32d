#!/usr/bin/env bash
# Ninth session: the split-KV merge with 8 partial loads in flight per thread (was 4) and the
# started-count read overlapped with the arrival fence (branch merge-latency) against main
# (hack/: an untracked copy of main), alternating, two rounds, on the split-heavy cases' shipped
# configs (checked against the float64 oracle).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/ah"; out=$(cd "$out" && pwd)
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases="kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-batch page1-decode
kimi-tp1-decode kimi-tp1-decode-64k kimi-tp8-verify-tree kimi-tp1-verify-tree
dsv32-sparse-h16-b1 dsv32-sparse-h64-b1 dsv32-sparse-h128-b1 dsv32-sparse-h16-b32 dsv32-sparse-h64-b32"
for round in 1 2; do
  (cd hack && PYTHONPATH=. timeout 150 python3 bench/time_shipped.py --reps 30 $cases > "$out/ah/main-$round.jsonl" 2> "$out/ah/main-$round.err")
  echo "main $round exit $?"
  PYTHONPATH=. timeout 150 python3 bench/time_shipped.py --reps 30 $cases > "$out/ah/new-$round.jsonl" 2> "$out/ah/new-$round.err"
  echo "new $round exit $?"
done
python3 - "$out/ah" <<'PY'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
rows = {}
for f in sorted(d.glob("*.jsonl")):
    for line in f.read_text().splitlines():
        r = json.loads(line)
        rows.setdefault(r["case"], {})[f.stem] = (r.get("median_us"), r.get("error"), r["status"])
for case, t in rows.items():
    cells = [f"{k}={v[0]:.1f}" if v[0] else f"{k}={v[2]}" for k, v in sorted(t.items())]
    print(f"{case:24s}", " ".join(cells))
PY
grep -h -i "error\|Traceback" "$out"/ah/*.err | head -5
