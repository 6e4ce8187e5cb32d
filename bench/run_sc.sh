#!/usr/bin/env bash
# On the device (thirty-third session): knock-in itemrows (results unchanged) on the 13 dense
# 16-bit entries, and knock-out nohandoff (racy: each role of a specialised block at its own pace)
# on the six specialised ones, against the shipped kernels; two rounds (the second reversed), the
# first checked against the unedited kernel.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
spec="kimi-tp1-decode kimi-tp8-decode-long page1-decode kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-wide"
rest="kimi-tp1-decode-64k kimi-tp1-batch dsv3-tp1-batch kimi-tp1-verify-tree kimi-tp8-verify-tree kimi-tp8-verify-batch dsv3-tp8-decode-long"
runs=""; rev=""
for c in $spec; do runs="$runs $c $c@itemrows $c@nohandoff"; rev="$c@nohandoff $c@itemrows $c $rev"; done
for c in $rest; do runs="$runs $c $c@itemrows"; rev="$c@itemrows $c $rev"; done
timeout 280 python3 bench/knockout.py --reps 20 --check $runs > "$out/ko-1.txt" 2>&1
echo "round 1 exit $? at ${SECONDS}s"; cat "$out/ko-1.txt"
timeout $(( 570 - SECONDS )) python3 bench/knockout.py --reps 20 $rev > "$out/ko-2.txt" 2>&1
echo "round 2 exit $? at ${SECONDS}s"; cat "$out/ko-2.txt"
