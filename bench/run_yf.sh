#!/usr/bin/env bash
# On the device (thirty-ninth session): the raw-fp8-fragment prototype's float16 path with every
# slot one of 32 cached rows (its compute without DRAM's latency), beside its listed-slot timing.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 300 python3 bench/fp8mma/fp8mma.py dsv32-sparse-h16-b128 --path f16 --splits 2 --stages 2 4 > "$out/listed.txt" 2>&1
timeout 300 python3 bench/fp8mma/fp8mma.py dsv32-sparse-h16-b128 --hot --path f16 --splits 2 --stages 2 4 > "$out/hot.txt" 2>&1
echo "exit $?"; tail -3 "$out/listed.txt"; tail -3 "$out/hot.txt"
exit 0
