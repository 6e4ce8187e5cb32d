#!/usr/bin/env bash
# On the device (fourteenth session): the combine tail's phases, stamped inside the final merger
# (bench/trace.py's finer stamps: piece taken, lse read, weights, partials loaded, merged).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
PYTHONPATH=. timeout 300 python3 bench/trace.py kimi-tp8-decode-long kimi-tp1-decode \
    dsv3-tp8-decode-batch kimi-tp8-verify-tree > "$out/trace.txt" 2>&1
cat "$out/trace.txt"
