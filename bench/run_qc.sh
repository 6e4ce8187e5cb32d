#!/usr/bin/env bash
# On the device (thirty-first session, call 3): the per-block fixed cost. ncu (qb/) puts 20-35% of
# the B = 1 kernels' warp time outside the tile loop, and their prologue and epilogue compute a
# 64-bit address for each q fragment load and each output store. Knock-ins qrow (q's fragments
# from one address a row) and orow (write_row's stores likewise), every 16-bit dense grid case
# (the shipped configs; tree cases on the row path), outputs checked against the unedited kernel.
# Two rounds. (Since the thirty-second session both are in the templates, in a spill-free form,
# and the knock-ins are gone from bench/knockout.py: this script records what ran, at 26a3986.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases="kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-long
  dsv3-tp8-decode-wide kimi-tp1-decode kimi-tp1-decode-64k kimi-tp1-batch dsv3-tp1-batch
  kimi-tp8-verify-tree kimi-tp8-verify-batch kimi-tp1-verify-tree page1-decode"
runs=""
for round in 1 2; do
  for c in $cases; do runs="$runs $c $c@qrow+orow"; done
done
timeout 500 python3 bench/knockout.py --check --reps 30 $runs > "$out/rows.txt" 2> "$out/rows.err"
echo "exit $?"; tail -2 "$out/rows.err" | cut -c1-300; cut -c1-150 "$out/rows.txt"
