#!/usr/bin/env bash
# On the device (thirty-seventh session): `nospread` on more lock-step 8- and 12-warp blocks (the
# three-row decode block, which has no ring; a two-row-group 8-warp verification block), --check.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
w12=num_warps=12,col_groups=4,min_blocks=1,split_softmax=1,qk_ahead=0
runs=()
for c in "dsv3-tp1-batch:heads_per_block=48,$w12,kv_splits=5,smem_stages=3" \
    "kimi-tp1-decode-64k:heads_per_block=48,$w12,kv_splits=33,smem_stages=3" \
    "kimi-tp1-verify-tree:heads_per_block=2,num_warps=8,col_groups=4,min_blocks=1,split_softmax=1,qk_ahead=0,smem_stages=3,kv_splits=4"; do
  runs+=("$c@base" "$c@nospread")
done
timeout 200 python3 bench/knockout.py --reps 20 --check "${runs[@]}" > "$out/ko1.txt" 2> "$out/ko1.err"
echo "knockout round 1 exit $?"
timeout 120 python3 bench/knockout.py --reps 20 "${runs[@]}" > "$out/ko2.txt" 2> "$out/ko2.err"
echo "knockout round 2 exit $?"
tail -3 "$out/ko1.err"
paste -d' ' <(cut -c1-250 "$out/ko1.txt") <(awk '{print $NF}' "$out/ko2.txt") | sed 's/  */ /g; s/num_warps=[^ ]*qk_ahead=0,//'
