#!/usr/bin/env bash
# Twelfth session, device call bc: the sparse kernels' occupancy. The shipped sparse configs run
# 202-245 registers (the fp8 rows held in registers a tile ahead), two 4-warp or one 8-warp block
# per SM; 16-head 4-warp blocks of 16-position gathers at min_blocks 3 (168 registers: three per
# SM) as time_shipped.py overrides (bench/sparse_occupancy_cases.txt), two rounds. Then the host
# cost per call (bench/host_overhead.py).
# (The timing loop is now bench/time_cases.sh; on the device this script carried its own copy.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache PYTHONPATH=.
OUT="$out" bash bench/time_cases.sh bench/sparse_occupancy_cases.txt 2
timeout 120 python3 bench/host_overhead.py > "$out/host_overhead.txt" 2>&1; tail -8 "$out/host_overhead.txt"
