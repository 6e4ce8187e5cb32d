#!/usr/bin/env bash
# (Runs from a checkout of branch static-merge, with mn/ a copy of main before it.)
# On the device (fourteenth session): the one-pass merge with the register cap its three
# occupancy-bound entries need (min_blocks 3, 3 and 2), both trees, one round.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases="kimi-tp1-batch:min_blocks=3 kimi-tp1-decode-64k:min_blocks=3 kimi-tp8-verify-tree:min_blocks=2
  kimi-tp1-verify-tree kimi-tp8-decode-long dsv3-tp8-decode-batch"
PYTHONPATH=. timeout 200 python3 bench/sass_dump.py "$out/sass" $cases > "$out/resources.txt" 2>&1
cut -c1-150 "$out/resources.txt"
bash bench/ab.sh ab 1 10 mn . -- $cases > "$out/ab.txt" 2>&1; cat "$out/ab.txt"
rm -rf "$out/sass"; (cd "$out" && tar czf ab.tar.gz ab && rm -rf ab)
