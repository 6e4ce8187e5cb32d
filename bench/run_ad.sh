#!/usr/bin/env bash
# Ninth session, first device call: what the fp8 -> bf16 conversion costs the sparse kernels.
# hack/ (an untracked copy of the tree, not committed) widens e4m3 pairs with the one-instruction
# float16 conversion and uses the bits as bfloat16 (wrong values, timed anyway): the upper bound
# of what a float16 tensor-core path for fp8 caches can save. Main and hack alternate, twice.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/ad"; out=$(cd "$out" && pwd)
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases="dsv32-sparse-h16-b1 dsv32-sparse-h16-b32 dsv32-sparse-h16-b128 dsv32-sparse-h64-b1 dsv32-sparse-h64-b32 dsv32-sparse-h64-b128 dsv32-sparse-h128-b1 dsv32-sparse-h128-b32 dsv32-sparse-h128-b128 dsv32-sparse-h16-verify"
for round in 1 2; do
  (PYTHONPATH=. timeout 200 python3 bench/time_shipped.py --reps 20 $cases > "$out/ad/main-$round.jsonl" 2> "$out/ad/main-$round.err")
  echo "main $round exit $?"
  (cd hack && PYTHONPATH=. timeout 200 python3 bench/time_shipped.py --reps 20 $cases > "$out/ad/hack-$round.jsonl" 2> "$out/ad/hack-$round.err")
  echo "hack $round exit $?"
done
python3 - "$out/ad" <<'PY'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
rows = {}
for f in sorted(d.glob("*.jsonl")):
    tree = f.stem
    for line in f.read_text().splitlines():
        r = json.loads(line)
        rows.setdefault(r["case"], {})[tree] = r.get("median_us")
for case, t in rows.items():
    print(f"{case:28s}", " ".join(f"{k}={v:.1f}" if v else f"{k}=None" for k, v in sorted(t.items())))
PY
tail -3 "$out"/ad/*.err | head -40
