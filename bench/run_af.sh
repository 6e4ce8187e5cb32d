#!/usr/bin/env bash
# Ninth session: split-KV partials in the output's dtype (branch partials16) against float32
# partials (hack/: an untracked copy of main before it), alternating, two rounds, on the shipped
# configs of the split-heavy cases. Each run checks against the float64 oracle (error column).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/af"; out=$(cd "$out" && pwd)
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases="kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-batch page1-decode
kimi-tp1-decode kimi-tp1-decode-64k kimi-tp8-verify-tree kimi-tp1-verify-tree
dsv32-sparse-h16-b1 dsv32-sparse-h64-b1 dsv32-sparse-h128-b1 dsv32-sparse-h16-b32 dsv32-sparse-h64-b32"
for round in 1 2; do
  (cd hack && PYTHONPATH=. timeout 150 python3 bench/time_shipped.py --reps 20 $cases > "$out/af/f32-$round.jsonl" 2> "$out/af/f32-$round.err")
  echo "f32 $round exit $?"
  PYTHONPATH=. timeout 150 python3 bench/time_shipped.py --reps 20 $cases > "$out/af/t16-$round.jsonl" 2> "$out/af/t16-$round.err"
  echo "t16 $round exit $?"
done
python3 - "$out/af" <<'PY'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
rows = {}
for f in sorted(d.glob("*.jsonl")):
    for line in f.read_text().splitlines():
        r = json.loads(line)
        rows.setdefault(r["case"], {})[f.stem] = (r.get("median_us"), r.get("error"), r["status"])
for case, t in rows.items():
    cells = [f"{k}={v[0]:.1f}" if v[0] else f"{k}={v[2]}" for k, v in sorted(t.items())]
    errs = [f"{v[1]:.1e}" for k, v in sorted(t.items()) if v[1] is not None][:1] + [f"{v[1]:.1e}" for k, v in sorted(t.items()) if v[1] is not None][-1:]
    print(f"{case:24s}", " ".join(cells), "err f32/t16", " ".join(errs))
PY
grep -h -i "error\|Traceback" "$out"/af/*.err | head -5
