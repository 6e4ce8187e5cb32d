#!/usr/bin/env bash
# On the device (eighteenth session, final tree): seed-fp32-verify's tuned entry and heuristic
# default timed; the whole GPU suite.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 60 python3 bench/time_shipped.py --reps 20 seed-fp32-verify > "$out/fp32.jsonl" 2>> "$out/fp32.err"
timeout 60 python3 bench/time_shipped.py --reps 20 --default seed-fp32-verify >> "$out/fp32.jsonl" 2>> "$out/fp32.err"
cat "$out/fp32.jsonl"
bash bench/gpu_suite.sh 300 "$out/gpu-tests.log"
md5sum kgen/tuned/tuning.json templates/mla/fma/tiled.cuh kgen/mla/tiled_layout.py kgen/mla/heuristic.py
