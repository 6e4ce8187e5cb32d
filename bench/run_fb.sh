#!/usr/bin/env bash
# On the device (twenty-first session): the gather ceiling with seven ways of dealing the rows
# (bench/gather_ceiling.py); dsv32-sparse-h128-b1 at split counts between the sweep's; the sm_120
# defaults of the compute-bound dense cases against 16-warp-an-SM variants at sm_120's occupancy
# (bench/sm120_like.py: the default holds 8 warps an SM there).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 200 python3 bench/gather_ceiling.py > "$out/gather_ceiling.txt" 2>&1; echo "ceiling exit $?"
cat "$out/gather_ceiling.txt"
S=""; for s in 8 12 16 20 24; do S="$S dsv32-sparse-h128-b1:kv_splits=$s"; done
timeout 120 python3 bench/time_shipped.py --reps 30 $S > "$out/h128b1_splits.jsonl" 2> "$out/h128b1_splits.err"
echo "splits exit $?"
V=""
for c in kimi-tp1-batch dsv3-tp1-batch kimi-tp1-decode-64k kimi-tp1-decode; do
  V="$V $c $c:heads_per_block=32,num_warps=8,split_softmax=0,min_blocks=2"
  V="$V $c:heads_per_block=32,num_warps=8 $c:heads_per_block=64,num_warps=16"
  V="$V $c:heads_per_block=64,num_warps=16,smem_stages=3"
done
for c in kimi-tp8-verify-batch; do
  V="$V $c $c:heads_per_block=4,num_warps=8,split_softmax=0,min_blocks=2 $c:heads_per_block=8,num_warps=16"
done
timeout 270 python3 bench/sm120_like.py --reps 20 $V > "$out/sm120_16w.jsonl" 2> "$out/sm120_16w.err"
echo "sm120 exit $?"
python3 - "$out"/h128b1_splits.jsonl "$out"/sm120_16w.jsonl <<'PY'
import json, sys
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        if "case" not in r:
            continue
        us = r.get("median_us")
        keys = ("config", "splits", "status", "registers", "spills", "blocks_per_sm")
        print(r["case"][:60], *(r.get(k) for k in keys), us if us is None else round(us, 2))
PY
