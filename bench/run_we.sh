#!/usr/bin/env bash
# On the device (thirty-seventh session): `nospread` on more lock-step 8- and 12-warp blocks (the
# three-row decode block, which has no ring; a two-row-group 8-warp verification block), --check.
# (As run at 03fa4fb: its two rounds inline, the same commands as bench/knockout_rounds.sh.)
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
bash bench/knockout_rounds.sh 200 "${runs[@]}"
