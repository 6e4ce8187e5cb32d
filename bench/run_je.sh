#!/usr/bin/env bash
# On the device (twenty-fifth session, call 5): rows per KV tile at equal occupancy (8 warps per
# SM): 16-row 4-warp blocks two per SM (min_blocks 2) against 32-row 8-warp blocks one per SM
# (each KV tile read once for twice the rows); the shipped 12-warp configs beside them.
# (The recorded run, je/rows-<round>.jsonl, printed its own table of the same calls; bench/ab.sh with
# one tree times them the same way: time_shipped.py --reps 20 over the cases, two rounds.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases=(dsv3-tp1-batch dsv3-tp1-batch:min_blocks=2,kv_splits=4
  dsv3-tp1-batch:heads_per_block=32,num_warps=8,kv_splits=4,min_blocks=1
  dsv3-tp1-batch:heads_per_block=32,num_warps=8,kv_splits=4,min_blocks=1,qk_ahead=0
  kimi-tp1-batch kimi-tp1-batch:min_blocks=2,kv_splits=4
  kimi-tp1-batch:heads_per_block=32,num_warps=8,kv_splits=4,min_blocks=1
  kimi-tp1-verify-tree kimi-tp1-verify-tree:min_blocks=2,kv_splits=4
  kimi-tp1-verify-tree:heads_per_block=2,num_warps=8,kv_splits=4,min_blocks=1)
bash bench/ab.sh rows 2 20 . -- "${cases[@]}"
