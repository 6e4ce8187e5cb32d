#!/usr/bin/env bash
# On the device (thirty-sixth session): what could decoupling a block's row groups buy? The
# three-row 12-warp block (48 rows share each KV tile: a third of the copies of three 4-warp
# blocks) runs its row groups in lock-step (a block barrier a tile); three 4-warp blocks drift
# apart. bench/knockout.py: `notilebar` drops the tile barrier (racy, timing only: a bound);
# `ring` (knock-in, checked against the unedited kernel) synchronises the tile ring with a
# barrier a stage (mbarrier) instead, so row groups drift up to a tile apart. (As run at a1befb2;
# the ring knock-in became Config.ring_slack in d39d77f: `@ring` is `:ring_slack=1@base` now.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
w12=num_warps=12,col_groups=4,min_blocks=1,split_softmax=1,qk_ahead=0
t3="kimi-tp1-verify-tree:heads_per_block=3,$w12,kv_splits=6"
t8="kimi-tp8-verify-tree:heads_per_block=3,$w12,kv_splits=44,smem_stages=4"
vb="kimi-tp8-verify-batch:heads_per_block=6,$w12,kv_splits=4,smem_stages=4"
runs=(
  kimi-tp1-verify-tree@base kimi-tp1-verify-tree@notilebar kimi-tp1-verify-tree@ring
  "$t3,smem_stages=4@base" "$t3,smem_stages=4@notilebar" "$t3,smem_stages=4@ring"
  "$t3,smem_stages=6@base" "$t3,smem_stages=6@ring" "$t3,smem_stages=8@ring"
  kimi-tp8-verify-tree@base "$t8@base" "$t8@notilebar" "$t8@ring"
  kimi-tp8-verify-batch@base "$vb@base" "$vb@ring"
)
timeout 240 python3 bench/knockout.py --reps 20 --check "${runs[@]}" > "$out/ko1.txt" 2> "$out/ko1.err"
echo "knockout round 1 exit $?"
timeout 120 python3 bench/knockout.py --reps 20 "${runs[@]}" > "$out/ko2.txt" 2> "$out/ko2.err"
echo "knockout round 2 exit $?"
tail -5 "$out/ko1.err"
paste -d' ' <(cut -c1-200 "$out/ko1.txt") <(awk '{print $NF}' "$out/ko2.txt") | sed 's/  */ /g'
