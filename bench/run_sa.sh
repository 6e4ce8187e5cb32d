#!/usr/bin/env bash
# On the device (thirty-third session): knock-in ws16 (split-KV partials in the output's 16-bit
# dtype, bench/knockout.py) against the shipped kernels, every dense case with splits, --check
# against the unedited kernel, two rounds (the second in the reverse order).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
cases="kimi-tp1-decode kimi-tp8-decode-long kimi-tp8-verify-tree kimi-tp1-decode-64k kimi-tp1-verify-tree
kimi-tp1-batch kimi-tp8-verify-batch dsv3-tp8-decode-long dsv3-tp1-batch"
runs=""; rev=""
for c in $cases; do runs="$runs $c $c@ws16"; rev="$c@ws16 $c $rev"; done
timeout 280 python3 bench/knockout.py --reps 20 --check $runs > "$out/ws16-1.txt" 2>&1
echo "round 1 exit $? at ${SECONDS}s"; cat "$out/ws16-1.txt"
timeout $(( 560 - SECONDS )) python3 bench/knockout.py --reps 20 $rev > "$out/ws16-2.txt" 2>&1
echo "round 2 exit $? at ${SECONDS}s"; cat "$out/ws16-2.txt"
