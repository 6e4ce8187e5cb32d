#!/usr/bin/env bash
# On the device (thirty-ninth session): the fp8-MMA prototype (bench/fp8mma/): oracle-checked and
# timed on the H = 16 sparse cases at 1/2/4 splits and 3/4 stages.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 400 python3 bench/fp8mma/fp8mma.py --splits 1 2 4 --stages 3 4 > "$out/fp8mma.txt" 2>&1
echo "fp8mma exit $?"; tail -40 "$out/fp8mma.txt"
exit 0
