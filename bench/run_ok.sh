#!/usr/bin/env bash
# On the device (twenty-ninth session, call 11): what split_range's check of the page ids costs a
# B = 1 call (the block-table round trip before the first KV copies): knock-in novalid against
# the shipped kernels, checked, two rounds.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=""
for round in 1 2; do
  for c in kimi-tp8-decode-long kimi-tp1-decode kimi-tp1-decode-64k kimi-tp8-verify-tree dsv3-tp8-decode-batch page1-decode; do
    runs="$runs $c $c@novalid"
  done
done
timeout 200 python3 bench/knockout.py --check --reps 30 $runs > "$out/novalid.txt" 2> "$out/novalid.err"
echo "exit $?"; tail -2 "$out/novalid.err" | cut -c1-300; cut -c1-140 "$out/novalid.txt"
