#!/usr/bin/env bash
# On the device (thirty-sixth session): the ring knock-in with more slack (row groups up to 2-4
# tiles apart; copies leading by stages - 1 - slack), more stages where one 12-warp block an SM
# leaves the H200's shared memory free; notilebar as the bound. Two rounds, the first --check'ed.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
w12=num_warps=12,col_groups=4,min_blocks=1,split_softmax=1,qk_ahead=0
t3="kimi-tp1-verify-tree:heads_per_block=3,$w12,kv_splits=6"
t8="kimi-tp8-verify-tree:heads_per_block=3,$w12,kv_splits=44"
d3="dsv3-tp1-batch:heads_per_block=48,$w12,kv_splits=5"
runs=(
  kimi-tp1-verify-tree@base "$t3,smem_stages=4@notilebar"
  "$t3,smem_stages=4@ring" "$t3,smem_stages=4@ring2"
  "$t3,smem_stages=6@ring2" "$t3,smem_stages=6@ring3"
  "$t3,smem_stages=8@ring2" "$t3,smem_stages=8@ring3" "$t3,smem_stages=8@ring4"
  kimi-tp8-verify-tree@base "$t8,smem_stages=6@ring2" "$t8,smem_stages=8@ring3"
  dsv3-tp1-batch@base "$d3,smem_stages=4@base" "$d3,smem_stages=8@ring3" "$d3,smem_stages=8@ring4"
)
timeout 240 python3 bench/knockout.py --reps 20 --check "${runs[@]}" > "$out/ko1.txt" 2> "$out/ko1.err"
echo "knockout round 1 exit $?"
timeout 120 python3 bench/knockout.py --reps 20 "${runs[@]}" > "$out/ko2.txt" 2> "$out/ko2.err"
echo "knockout round 2 exit $?"
tail -3 "$out/ko1.err"
paste -d' ' <(cut -c1-200 "$out/ko1.txt") <(awk '{print $NF}' "$out/ko2.txt") | sed 's/  */ /g; s/num_warps=12,col_groups=4,min_blocks=1,split_softmax=1,qk_ahead=0,//'
