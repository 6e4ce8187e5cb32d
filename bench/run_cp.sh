#!/usr/bin/env bash
# On the device (seventeenth session, final tree): the whole GPU suite; then every 16-bit dense
# grid case's shipped config timed (oracle-checked, L2 flushed, median of 10).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/gpu_suite.sh 360 "$out/gpu-tests.log"
timeout 200 python3 bench/time_shipped.py --reps 10 > "$out/shipped.jsonl" 2> "$out/shipped.err"
python3 - "$out/shipped.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line); print(f"{r['case'][:28]:28s} {r['config']:40s} {r['status']} {r['median_us'] or 0:.1f}")
PY
md5sum kgen/tuned/tuning.json templates/mla/mma/*.cuh kgen/mla/heuristic.py
