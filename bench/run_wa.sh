#!/usr/bin/env bash
# On the device (thirty-seventh session): do the three-row block's row groups gain from running
# out of phase? With the ring (ring_slack >= 1) a row group may lag; knock-ins stag350/700/1400
# (bench/knockout.py) start row group g's prefix loop g x N clocks after group 0, so one group's
# q.K^T overlaps another's softmax. --check: outputs against the unedited kernel.
# (As run at 2660482: its two rounds inline, the same commands as bench/knockout_rounds.sh.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
w12=num_warps=12,col_groups=4,min_blocks=1,split_softmax=1,qk_ahead=0
t3="kimi-tp1-verify-tree:heads_per_block=3,$w12,kv_splits=6"
t8="kimi-tp8-verify-tree:heads_per_block=3,$w12,kv_splits=44,smem_stages=4,ring_slack=1"
d48="dsv3-tp1-batch:heads_per_block=48,$w12,kv_splits=5,smem_stages=4,ring_slack=1"
runs=(
  kimi-tp1-verify-tree@base
  "$t3,smem_stages=4,ring_slack=1@base" "$t3,smem_stages=4,ring_slack=1@stag350"
  "$t3,smem_stages=4,ring_slack=1@stag700" "$t3,smem_stages=4,ring_slack=1@stag1400"
  "$t3,smem_stages=4,ring_slack=2@stag700" "$t3,smem_stages=4,ring_slack=2@stag1400"
  "$t3,smem_stages=6,ring_slack=2@base" "$t3,smem_stages=6,ring_slack=2@stag700"
  "$t3,smem_stages=6,ring_slack=2@stag1400" "$t3,smem_stages=8,ring_slack=3@stag1400"
  kimi-tp8-verify-tree@base "$t8@base" "$t8@stag700"
  dsv3-tp1-batch@base "$d48@base" "$d48@stag700"
)
bash bench/knockout_rounds.sh 260 "${runs[@]}"
