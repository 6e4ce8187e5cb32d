#!/usr/bin/env bash
# On the device (thirteenth session): why branch qk-chains ran 60% slower on kimi-tp1-batch (twelfth
# session, item 2). qc/ = main + qk-chains' template diff (untracked copy). The device's resources
# and SASS of both trees for the shipped config, an A/B, and ncu (bench/stalls.sh) of both; ncu of
# main's dsv3-tp8-decode-batch (the H = 16 path, for a phase breakdown).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
FULL=heads_per_block=16,kv_splits=6,smem_stages=3,num_warps=4,block_n=16,col_groups=4,min_blocks=1,qk_ahead=0,split_softmax=1,split_reduce=0,swap_rows=0,vec_width=8
CASE="kimi-tp1-batch:$FULL"
export PATH=$PATH:/usr/local/cuda/bin
for t in . qc; do
  (cd "$t" && PYTHONPATH=. python3 bench/sass_dump.py "$out/sass-$(basename "$(pwd)")" "$CASE" 2>&1 | tail -3)
done
bash bench/ab.sh qcab 2 10 . qc -- "$CASE" "kimi-tp1-decode-64k"
(cd qc && OUT="$out/qc" bash bench/stalls.sh "$CASE" | tail -4)
OUT="$out/main" bash bench/stalls.sh "$CASE" dsv3-tp8-decode-batch | tail -4
cd "$out" && tar czf sass.tar.gz sass-* && rm -rf sass-*
