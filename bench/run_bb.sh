#!/usr/bin/env bash
# Twelfth session, device call bb: 4-warp one-tile blocks at four per SM (two 16-position stages,
# min_blocks 4: 128 registers, 16 warps per SM on the H200) against the shipped three-per-SM
# configs, as time_shipped.py overrides (bench/occupancy_cases.txt), two rounds; then the whole
# GPU suite on main (the default-refit heuristic).
# (The timing loop is now bench/time_cases.sh; on the device this script carried its own copy.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache PYTHONPATH=.
OUT="$out" bash bench/time_cases.sh bench/occupancy_cases.txt 2
bash bench/gpu_suite.sh 420 "$out/gpu-tests.log"
