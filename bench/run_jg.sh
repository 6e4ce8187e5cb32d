#!/usr/bin/env bash
# On the device (twenty-fifth session, call 7): dsv32-sparse-h128-b1 (15 us target, shipped 16.4)
# around its shipped config: split counts, 16-position tiles two blocks an SM, 32-head blocks.
# (The recorded run, jg/h128b1-<round>.jsonl, printed its own table of the same calls; bench/ab.sh with
# one tree times them the same way: time_shipped.py --reps 30 over the cases, two rounds.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
R=dsv32-sparse-h128-b1
cases=($R $R:kv_splits=12 $R:kv_splits=14 $R:gather_bytes=8
  $R:block_n=16 $R:block_n=16,kv_splits=24 $R:block_n=16,kv_splits=32 $R:block_n=16,kv_splits=33
  $R:heads_per_block=32,kv_splits=32,col_groups=4 $R:heads_per_block=32,kv_splits=33,col_groups=4)
bash bench/ab.sh h128b1 2 30 . -- "${cases[@]}"
