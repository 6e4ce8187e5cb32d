#!/usr/bin/env bash
# On the device (sixteenth session): warps specialised by phase (Config.specialize) against the
# shipped configs, oracle-checked, two variants per case (4 stages with ptxas's registers; 3
# stages at two blocks per SM); compute-sanitizer on the specialized sample; the whole GPU suite.
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
timeout 330 python3 bench/time_shipped.py --reps 10 "${runs[@]}" > "$out/ws.jsonl" 2> "$out/ws.err"
echo "ws exit $?"
python3 - "$out/ws.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    name = r['case'].split(':')[0] + (':' + r['case'].split('smem_stages=')[1] if 'smem_stages=' in r['case'] else '')
    print(f"{name:44s} {r['config']:40s} {r['status']} {r['median_us'] or 0:.1f} {(r.get('error') or '')[:80]}")
PY
bash bench/sanitize.sh 100 tests/sanitize_sample.py ws _ws
bash bench/gpu_suite.sh 300 "$out/gpu-tests.log"
