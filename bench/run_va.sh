#!/usr/bin/env bash
# On the device (thirty-sixth session): what could decoupling a block's row groups buy? The
# three-row 12-warp block (48 rows share each KV tile: a third of the copies of three 4-warp
# blocks) runs its row groups in lock-step (a block barrier a tile); three 4-warp blocks drift
# apart. bench/knockout.py `notilebar` drops the tile barrier (racy, timing only: the bound a
# barrier a stage could approach), on the tree cases' shipped configs and three-row variants.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
w12=num_warps=12,col_groups=4,min_blocks=1,split_softmax=1,qk_ahead=0,smem_stages=4
runs=(
  kimi-tp1-verify-tree@base kimi-tp1-verify-tree@notilebar
  "kimi-tp1-verify-tree:heads_per_block=3,$w12,kv_splits=6@base"
  "kimi-tp1-verify-tree:heads_per_block=3,$w12,kv_splits=6@notilebar"
  "kimi-tp1-verify-tree:heads_per_block=3,$w12,kv_splits=6@nocopy"
  kimi-tp8-verify-tree@base
  "kimi-tp8-verify-tree:heads_per_block=3,$w12,kv_splits=44@base"
  "kimi-tp8-verify-tree:heads_per_block=3,$w12,kv_splits=44@notilebar"
  kimi-tp8-verify-batch@base
  "kimi-tp8-verify-batch:heads_per_block=6,$w12,kv_splits=4@base"
  "kimi-tp8-verify-batch:heads_per_block=6,$w12,kv_splits=4@notilebar"
)
for round in 1 2; do
  timeout 200 python3 bench/knockout.py --reps 20 "${runs[@]}" > "$out/ko$round.txt" 2> "$out/ko$round.err"
  echo "knockout round $round exit $?"
done
paste <(cut -c1-110 "$out/ko1.txt") <(awk '{print $NF}' "$out/ko2.txt")
