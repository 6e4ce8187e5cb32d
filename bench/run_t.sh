#!/usr/bin/env bash
# Seventh session, first device call: ncu (bench/stalls.sh) on the three 4-warp decode cases
# nearest their targets, and bench/host_overhead.py with cuda-python's other launch routes.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
python3 bench/host_overhead.py > "$out/host_overhead.txt" 2>&1
bash bench/stalls.sh dsv3-tp8-decode-batch kimi-tp8-decode-batch page1-decode > "$out/stalls.log" 2>&1
cat "$out/host_overhead.txt"; tail -5 "$out/stalls.log"; head -80 "$out/stalls-details.txt"
