#!/usr/bin/env bash
# On the device (thirty-ninth session): the raw-fp8-fragment prototype's float16 path (e4m3 bytes
# to float16 pairs at the fragments, m16n8k16 f16 MMAs: what sm_90 runs natively) against its e4m3
# path, on the H = 16 sparse cases (oracle-checked, kernel alone, L2 flushed, median of 20).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 400 python3 bench/fp8mma/fp8mma.py dsv32-sparse-h16-b128 dsv32-sparse-h16-verify \
  dsv32-sparse-h16-b32 --path f16 --splits 1 2 4 8 --stages 2 3 4 > "$out/fp8mma.txt" 2>&1
echo "fp8mma exit $?"; tail -60 "$out/fp8mma.txt"
exit 0
