#!/usr/bin/env bash
# On the device (sixteenth session): col_groups = 2 (never swept: warps own 256 output columns and
# half of q.K's head dims) against the shipped configs, oracle-checked; and the split-KV merge's
# price on the near-miss decode cases (knock-out nocomb).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
A=col_groups=2,num_warps=2,smem_stages=4,min_blocks=0,qk_ahead=0,pdl_combine=0
B=col_groups=2,num_warps=4,smem_stages=3,min_blocks=2,qk_ahead=0,pdl_combine=0
timeout 300 python3 bench/time_shipped.py --reps 10 \
  kimi-tp1-batch "kimi-tp1-batch:$A,kv_splits=4" "kimi-tp1-batch:$B,heads_per_block=32,kv_splits=8" \
  dsv3-tp1-batch "dsv3-tp1-batch:$A,kv_splits=4" "dsv3-tp1-batch:$B,heads_per_block=32,kv_splits=8" \
  kimi-tp1-decode-64k "kimi-tp1-decode-64k:$A,kv_splits=66" "kimi-tp1-decode-64k:$B,heads_per_block=32,kv_splits=132" \
  kimi-tp8-verify-batch "kimi-tp8-verify-batch:$A,heads_per_block=2,kv_splits=4" \
  "kimi-tp8-verify-batch:$B,heads_per_block=4,kv_splits=8" \
  > "$out/c2.jsonl" 2> "$out/c2.err"
echo "c2 exit $?"
timeout 150 python3 bench/knockout.py --reps 10 \
  dsv3-tp8-decode-batch dsv3-tp8-decode-batch@nocomb dsv3-tp8-decode-wide dsv3-tp8-decode-wide@nocomb \
  page1-decode page1-decode@nocomb kimi-tp8-decode-batch kimi-tp8-decode-batch@nocomb \
  kimi-tp1-decode kimi-tp1-decode@nocomb > "$out/ko.txt" 2>&1
echo "ko exit $?"
python3 - "$out/c2.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line); print(f"{r['case'][:60]:60s} {r['config']:42s} {r['status']} {r['median_us'] or 0:.1f}")
PY
tail -12 "$out/ko.txt"
