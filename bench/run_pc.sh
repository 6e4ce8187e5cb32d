#!/usr/bin/env bash
# On the device (thirtieth session, call 3): the PDL merge's slice cap 16 -> 32 (one round of loads
# up to 256 splits): A/B on the case with more than 128 splits, then the whole GPU suite on main.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 150 python3 bench/combine_slices_ab.py --rounds 3 kimi-tp8-decode-long > "$out/slices_ab.txt" 2> "$out/slices_ab.err"
echo "ab exit $?"; tail -2 "$out/slices_ab.err" | cut -c1-300; cat "$out/slices_ab.txt"
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
tail -3 "$out/gpu-tests.log"
