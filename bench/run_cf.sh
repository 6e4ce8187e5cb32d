#!/usr/bin/env bash
# On the device (sixteenth session): specialize after the hand-off rewrite (one block barrier per
# tile) against the shipped configs, oracle-checked; compute-sanitizer on the specialized
# sample; the dense hypothesis suites (which draw specialize).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
WS=specialize=1,num_warps=8,col_groups=4,qk_ahead=0,split_softmax=1,swap_rows=0
runs=()
for c in kimi-tp1-batch dsv3-tp1-batch kimi-tp1-decode-64k kimi-tp1-decode kimi-tp8-verify-batch \
         kimi-tp1-verify-tree kimi-tp8-verify-tree dsv3-tp8-decode-batch dsv3-tp8-decode-long \
         dsv3-tp8-decode-wide page1-decode kimi-tp8-decode-batch kimi-tp8-decode-long; do
  runs+=("$c" "$c:$WS,smem_stages=4,min_blocks=0" "$c:$WS,smem_stages=3,min_blocks=2")
done
timeout 300 python3 bench/time_shipped.py --reps 10 "${runs[@]}" > "$out/ws.jsonl" 2> "$out/ws.err"
echo "ws exit $?"
python3 - "$out/ws.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line); c = r['case']
    tag = 'shipped' if ':' not in c else ('st4' if 'smem_stages=4' in c else 'st3mb2')
    print(f"{c.split(':')[0]:22s} {tag:8s} {r['config']:40s} {r['status']} {r['median_us'] or 0:7.1f}")
PY
bash bench/sanitize.sh 100 tests/sanitize_sample.py ws _ws
bash bench/gpu_suite.sh 200 "$out/gpu-tests.log" tests/test_mla_gpu.py
