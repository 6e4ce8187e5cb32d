#!/usr/bin/env bash
# On the device (thirty-seventh session): decode of 64-128 heads at sm_120's occupancy: the default
# (132 SMs: the specialised 8-warp block), the one-role two-block default sm_120 takes at 188 SMs
# (hb16 st2 w4 mb1), and one 8-warp block of two 16-head row groups on one KV pipeline (hb32 w8,
# 88 KB: one an SM) at four stages in lock-step and on the ring (ring_slack 1: copies two tiles
# ahead, against st2's one). bench/sm120_like.py, oracle-checked, 20 reps.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
two=heads_per_block=16,num_warps=4,smem_stages=2,min_blocks=1,specialize=0,col_groups=4,split_softmax=1,qk_ahead=0
w8=heads_per_block=32,num_warps=8,col_groups=4,min_blocks=1,specialize=0,split_softmax=1,qk_ahead=0
runs=()
for shape in kimi-tp1-batch dsv3-tp1-batch kimi-tp1-decode-64k kimi-tp1-decode; do
  runs+=("$shape" "$shape:$two" "$shape:$w8,smem_stages=4" "$shape:$w8,smem_stages=4,ring_slack=1")
done
timeout 250 python3 bench/sm120_like.py --reps 20 "${runs[@]}" > "$out/sm120_w8.jsonl" 2> "$out/sm120_w8.err"
echo "sm120_like exit $?"
grep "^sm120_like:" "$out/sm120_w8.err" | sed 's/  */ /g'
tail -3 "$out/sm120_w8.err"
