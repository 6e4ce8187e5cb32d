#!/usr/bin/env bash
# On the device machine (sixth session): Nsight Compute on the shipped kernels of three cases far
# from their targets plus one 8-column-group variant (bench/stalls.sh), then the shipped configs
# timed from this tree and from ur-run/ (branch unroll-stages: the KV loop unrolled STAGES times,
# placed with git archive first). Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}
export PYTHONUNBUFFERED=1
timeout 300 bash bench/stalls.sh dsv3-tp1-batch kimi-tp8-verify-batch kimi-tp1-decode-64k \
  "dsv3-tp1-batch:col_groups=8,block_n=16,smem_stages=3" > "$out/stalls.log" 2>&1; echo "stalls exit $?"
PYTHONPATH=. KGEN_CACHE_DIR=/tmp/kgen-cache timeout 120 python3 bench/time_shipped.py --reps 20 > "$out/shipped-main.jsonl" 2>"$out/shipped-main.err"; echo "main exit $?"
(cd ur-run && PYTHONPATH=. KGEN_CACHE_DIR=/tmp/kgen-cache-ur timeout 120 python3 bench/time_shipped.py --reps 20 > "$out/shipped-unroll.jsonl" 2>"$out/shipped-unroll.err"; echo "unroll exit $?")
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def load(name):
    try:
        return {r["case"]: r for r in map(json.loads, open(f"{out}/{name}")) }
    except OSError:
        return {}
a, b = load("shipped-main.jsonl"), load("shipped-unroll.jsonl")
for case in a:
    x, y = a[case].get("median_us"), b.get(case, {}).get("median_us")
    print(f"{case:24} main {x or 0:8.1f}  unroll {y or 0:8.1f}  {a[case]['status']}/{b.get(case, {}).get('status')}")
PY
