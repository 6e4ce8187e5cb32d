#!/usr/bin/env bash
# On the device (twenty-eighth session, call 3): what the PDL merge kernel adds to a call
# (bench/combine_share.py: whole, then the attention kernel alone, twice) on the B = 1 cases and
# two batch cases.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 300 python3 bench/combine_share.py --reps 30 kimi-tp8-decode-long kimi-tp1-decode \
  kimi-tp1-decode-64k kimi-tp8-verify-tree dsv3-tp8-decode-batch dsv32-sparse-h16-b1 \
  dsv32-sparse-h64-b1 dsv32-sparse-h128-b1 dsv32-sparse-h16-b32 > "$out/combine_share.jsonl" 2> "$out/combine_share.err"
echo "exit $?"; tail -3 "$out/combine_share.err" | cut -c1-300
cat "$out/combine_share.jsonl"
