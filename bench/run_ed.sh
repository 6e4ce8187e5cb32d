#!/usr/bin/env bash
# On the device (twentieth session): sm_120's occupancy on the H200 (bench/sm120_like.py: the
# shared-memory carveout at 100 KB an SM): the sm_120 heuristic default of each 16-bit grid case
# against an 8-warp specialised block (decode of <= 16 heads) and 8-warp blocks of 8 column groups.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
WS=":specialize=1,num_warps=8,smem_stages=4,min_blocks=0"; C8=":num_warps=8,col_groups=8"
V=""
for c in dsv3-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-wide kimi-tp8-decode-batch kimi-tp8-decode-long page1-decode; do
  V="$V $c $c$WS $c$C8"
done
for c in kimi-tp1-decode kimi-tp1-batch dsv3-tp1-batch kimi-tp8-verify-tree kimi-tp8-verify-batch kimi-tp1-verify-tree; do
  V="$V $c $c$C8"
done
timeout 560 python3 bench/sm120_like.py --reps 20 $V > "$out/sm120_like.jsonl" 2> "$out/sm120_like.err"
echo "exit $?"; tail -3 "$out/sm120_like.err"
python3 - "$out/sm120_like.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "case" not in r:
        print(r); continue
    us = r.get("median_us")
    print(f"{r['case'][:60]:60s} {r['config']:40s} s{r['splits']:<4} {r['status']:5s} {us if us is None else round(us, 1)!s:>7} {r['sm_120']}")
PY
