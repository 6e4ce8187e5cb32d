#!/usr/bin/env bash
# Eighth session, last device minutes: ncu on the B = 1 swapped-rows decode and the tree
# verification (never profiled with their shipped configs), and bench/host_overhead.py on the
# final tree (issue 3/4's run <= 10 us).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/ac"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 100 python3 bench/host_overhead.py > "$out/ac/host_overhead.txt" 2>&1; cat "$out/ac/host_overhead.txt"
OUT="$out/ac" timeout 150 bash bench/stalls.sh kimi-tp8-decode-long kimi-tp8-verify-tree
grep -E "launch 0|Duration|DRAM Throughput|Achieved Active Warps|Issue Slots Busy|Registers Per|Grid Size|Eligible Warps" "$out/ac/stalls-details.txt"
grep -E "^  stall" "$out/ac/stalls-details.txt" | head -24
tar czf "$out/run-ac.tar.gz" -C "$out" ac && rm -rf "$out/ac"
