#!/usr/bin/env bash
# On the device (eighteenth session): do the 128-block decode entries leave SMs idle? Each shipped
# config timed at batch sizes around its grid case's, splits fixed: a kernel bound per SM takes as
# long at 132 blocks as at 128; one bound by DRAM takes 3% longer.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
t() { timeout 100 python3 bench/time_shipped.py --reps 20 --batch "$@" >> "$out/scaling.jsonl" 2>> "$out/scaling.err"; }
for round in 1; do
  for b in 60 64 66 68; do t $b dsv3-tp8-decode-batch; done
  for b in 30 32 33 34; do t $b page1-decode kimi-tp8-decode-batch; done
  for b in 124 128 132; do t $b dsv3-tp8-decode-wide; done
done
python3 - "$out/scaling.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line); print(f"{r['case'][:24]:24s} B={r['batch']:4d} {r['config']:36s} {r['status']} {r['median_us'] or 0:.1f}")
PY
