#!/usr/bin/env bash
# (Runs from a checkout of branch static-merge, with mn/ a copy of main before it.)
# On the device (fourteenth session): the combine rewritten for few round trips (static pieces,
# one read of lse and partial per slot, warp-shuffle merge, last leaver resets) against main
# (mn/ = a copy of main before it). Device-built resources, the traced tail, an A/B, GPU suite.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases="kimi-tp8-decode-long kimi-tp1-decode kimi-tp1-decode-64k kimi-tp8-verify-tree
  kimi-tp1-verify-tree dsv3-tp8-decode-batch kimi-tp8-decode-batch kimi-tp1-batch
  dsv32-sparse-h16-b1 dsv32-sparse-h64-b1 dsv32-sparse-h128-b1 dsv32-sparse-h16-b32"
dense=$(echo $cases | tr ' ' '\n' | grep -v sparse)
PYTHONPATH=. timeout 200 python3 bench/sass_dump.py "$out/sass" $dense > "$out/resources.txt" 2>&1
cut -c1-150 "$out/resources.txt"
PYTHONPATH=. timeout 200 python3 bench/trace.py kimi-tp8-decode-long kimi-tp1-decode \
    dsv3-tp8-decode-batch kimi-tp8-verify-tree > "$out/trace.txt" 2>&1
cat "$out/trace.txt"
bash bench/ab.sh ab 2 10 mn . -- $cases > "$out/ab.txt" 2>&1; cat "$out/ab.txt"
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
rm -rf "$out/sass" "$out/sass-mn"; (cd "$out" && tar czf ab.tar.gz ab && rm -rf ab)
