#!/usr/bin/env bash
# On the device (twenty-third session): the final tree and database: the whole GPU suite, then
# every dense grid case re-timed (shipped, default, graph, torch; bench/retime.py).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
md5sum kgen/tuned/tuning.json templates/*/*.cuh templates/*/*/*.cuh templates/*/*.jinja > "$out/tree.md5"
bash bench/gpu_suite.sh 335 "$out/gpu-tests.log"
timeout 200 python3 bench/retime.py "$out/retime.json" > "$out/retime.txt" 2> "$out/retime.err"
echo "retime exit $?"; cat "$out/retime.txt"; tail -3 "$out/retime.err"
