#!/usr/bin/env bash
# On the device (seventeenth session, final tree): the heuristic default (now specialised for
# decode of at most 16 heads where two such blocks share an SM) timed on every 16-bit dense case;
# then the whole GPU suite.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 150 python3 bench/time_shipped.py --reps 10 --default > "$out/default.jsonl" 2> "$out/default.err"
python3 - "$out/default.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line); print(f"{r['case'][:28]:28s} {r['config']:40s} {r['status']} {r['median_us'] or 0:.1f}")
PY
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
md5sum kgen/tuned/tuning.json templates/mla/mma/*.cuh kgen/mla/heuristic.py
