#!/usr/bin/env bash
# On the device (fifteenth session): 64-row blocks of 16 warps (four row groups of one m16 tile
# each, sharing one KV pipeline: each tile is copied once for all 64 rows) against the shipped
# configs (bench/hb64_cases.txt; oracle-checked); their knock-outs on kimi-tp1-batch.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
mapfile -t cases < bench/hb64_cases.txt
PYTHONPATH=. timeout 150 python3 bench/sass_dump.py "$out/sass" "${cases[@]}" > "$out/resources.txt" 2>&1
PYTHONPATH=. timeout 250 python3 bench/time_shipped.py --reps 10 "${cases[@]}" > "$out/times.jsonl" 2> "$out/times.err"
c=kimi-tp1-batch:heads_per_block=64,num_warps=16,kv_splits=8
PYTHONPATH=. timeout 150 python3 bench/knockout.py --reps 10 $c@base $c@nocopy $c@noqk $c@nopv $c@nosoft \
  $c@nocopy+noqk+nopv > "$out/knockout.txt" 2> "$out/knockout.err"
tar czf "$out/sass.tar.gz" -C "$out" sass && rm -rf "$out/sass"
cut -c1-200 "$out/resources.txt"
python3 - "$out/times.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['case'][:84]:84s} {r['status']:6s} {r['median_us'] or 0:8.1f} {r.get('error') or ''}")
PY
cat "$out/knockout.txt"; tail -3 "$out/times.err" "$out/knockout.err"
