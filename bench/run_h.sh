#!/usr/bin/env bash
# On the device machine (fourth session): the whole GPU suite on the code submitted, then each
# grid case's shipped config, heuristic default and plain torch re-timed (bench/retime.py).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout ${1:-330} python3 -m pytest -m gpu -q -n 15 -p no:cacheprovider -rfEs > "$out/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/gpu-tests.log")"
grep -E "^(FAILED|ERROR)" "$out/gpu-tests.log" | head -10
timeout ${2:-200} python3 bench/retime.py "$out/retime.json" > "$out/retime.log" 2>&1
echo "retime exit $?"; grep -v "it/s\]\|kernel/s\]" "$out/retime.log" | tail -16
