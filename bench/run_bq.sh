#!/usr/bin/env bash
# (Runs from a checkout of branch static-merge, with mn/ a copy of main before it.)
# On the device (fourteenth session): run_bp.sh's merge with 4 loads in flight (dense), for the
# registers: device-built resources and a one-round A/B against main (mn/).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases="kimi-tp8-decode-long kimi-tp1-decode kimi-tp1-decode-64k kimi-tp8-verify-tree
  dsv3-tp8-decode-batch kimi-tp1-batch"
PYTHONPATH=. timeout 200 python3 bench/sass_dump.py "$out/sass" $cases > "$out/resources.txt" 2>&1
cut -c1-150 "$out/resources.txt"
bash bench/ab.sh ab 1 10 mn . -- $cases > "$out/ab.txt" 2>&1; cat "$out/ab.txt"
rm -rf "$out/sass"; (cd "$out" && tar czf ab.tar.gz ab && rm -rf ab)
