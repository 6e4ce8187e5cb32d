#!/usr/bin/env bash
# On the device (thirtieth session, call 1): knock-in pipe (one barrier an iteration over three
# tiles: q.K^T of i + 1, split softmax of i, P.V of i - 1) against the shipped kernels and against
# the unedited qk_ahead + split_softmax kernel at the same shared memory (two blocks an SM),
# checked against the unedited kernel, two rounds.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
q="qk_ahead=1,smem_stages=4"
runs=""
for round in 1 2; do
  runs="$runs kimi-tp1-batch kimi-tp1-batch:$q,kv_splits=4 kimi-tp1-batch:$q,kv_splits=4@pipe"
  runs="$runs kimi-tp1-batch:$q@pipe kimi-tp1-batch:qk_ahead=1,smem_stages=5,kv_splits=4@pipe"
  runs="$runs dsv3-tp1-batch dsv3-tp1-batch:$q,kv_splits=4 dsv3-tp1-batch:$q,kv_splits=4@pipe"
  runs="$runs dsv3-tp1-batch:qk_ahead=1,smem_stages=5,kv_splits=4@pipe"
  runs="$runs kimi-tp1-batch:$q,kv_splits=4@pipeb dsv3-tp1-batch:$q,kv_splits=4@pipeb"
  runs="$runs kimi-tp1-decode-64k kimi-tp1-decode-64k:$q,kv_splits=66"
  runs="$runs kimi-tp1-decode-64k:$q,kv_splits=66@pipe kimi-tp1-decode-64k:$q@pipe"
  w4="specialize=0,num_warps=4,min_blocks=0"
  runs="$runs kimi-tp1-decode kimi-tp1-decode:$w4,$q,kv_splits=66@pipe"
  runs="$runs dsv3-tp8-decode-batch dsv3-tp8-decode-batch:$w4,$q,kv_splits=4@pipe"
done
timeout 420 python3 bench/knockout.py --check --reps 20 $runs > "$out/pipe.txt" 2> "$out/pipe.err"
echo "exit $?"; tail -3 "$out/pipe.err" | cut -c1-600; cut -c1-150 "$out/pipe.txt"
