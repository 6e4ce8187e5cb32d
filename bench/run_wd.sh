#!/usr/bin/env bash
# On the device (thirty-seventh session): the converse of run_wb.sh. The 4-warp blocks lost 3-8%
# with their copies dealt over q.K^T; do the 8- and 12-warp blocks (SPREAD_COPIES since the sixth
# session) gain with theirs in one burst after the tile barrier? Knock-in `nospread`, --check.
# (As run at dafdb98: its two rounds inline, the same commands as bench/knockout_rounds.sh.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
w12=num_warps=12,col_groups=4,min_blocks=1,split_softmax=1,qk_ahead=0
runs=()
for c in "kimi-tp1-verify-tree:heads_per_block=3,$w12,kv_splits=6,smem_stages=4,ring_slack=1" \
    "kimi-tp1-verify-tree:heads_per_block=3,$w12,kv_splits=6,smem_stages=4" \
    "kimi-tp8-verify-batch:heads_per_block=6,$w12,kv_splits=4,smem_stages=4,ring_slack=1" \
    "dsv3-tp1-batch:heads_per_block=48,$w12,kv_splits=5,smem_stages=4,ring_slack=1" \
    "kimi-tp1-batch:heads_per_block=32,num_warps=8,col_groups=4,min_blocks=1,split_softmax=1,qk_ahead=0,smem_stages=3,kv_splits=2"; do
  runs+=("$c@base" "$c@nospread")
done
bash bench/knockout_rounds.sh 200 "${runs[@]}"
