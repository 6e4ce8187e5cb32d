#!/usr/bin/env bash
# Ninth session: the new sparse default at B = 1 (as shipped-config overrides: the default's exact
# configs), and 32-row warps (warp_m = 2: hb32 w8 c8, one row group) against the shipped 16-row
# ones on the H >= 64 dense cases and one sparse case. JSON lines per case.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/ae"; out=$(cd "$out" && pwd)
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
defaults="dsv32-sparse-h16-b1 dsv32-sparse-h16-b1:block_n=32,kv_splits=64,min_blocks=1
dsv32-sparse-h64-b1 dsv32-sparse-h64-b1:min_blocks=1
dsv32-sparse-h128-b1 dsv32-sparse-h128-b1:heads_per_block=32,num_warps=8,kv_splits=32,min_blocks=1"
rows="dsv3-tp1-batch dsv3-tp1-batch:col_groups=8 kimi-tp1-batch kimi-tp1-batch:col_groups=8
kimi-tp1-decode-64k kimi-tp1-decode-64k:col_groups=8 kimi-tp1-verify-tree kimi-tp1-verify-tree:col_groups=8
dsv32-sparse-h64-b32 dsv32-sparse-h64-b32:col_groups=8 dsv32-sparse-h128-b32 dsv32-sparse-h128-b32:col_groups=8"
for round in 1 2; do
  timeout 200 python3 bench/time_shipped.py --reps 20 $defaults $rows > "$out/ae/round-$round.jsonl" 2> "$out/ae/round-$round.err"
  echo "round $round exit $?"
done
python3 - "$out/ae" <<'PY'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
rows = {}
for f in sorted(d.glob("round-*.jsonl")):
    for line in f.read_text().splitlines():
        r = json.loads(line)
        rows.setdefault(r["case"], []).append((r.get("median_us"), r["status"], r["config"]))
for case, t in rows.items():
    print(f"{case:64s}", " ".join(f"{m:.1f}" if m else s for m, s, _ in t), t[0][2])
PY
tail -n 3 "$out"/ae/*.err
