#!/usr/bin/env bash
# Twelfth session, device call bd: 8-warp blocks of 8 column groups (32 accumulator registers a
# thread instead of 64) on the H >= 64 decode cases, at 16 or 24 warps per SM, against the shipped
# three 4-warp blocks per SM, as time_shipped.py overrides (bench/c8_cases.txt), two rounds.
# (The timing loop is now bench/time_cases.sh; on the device this script carried its own copy.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache PYTHONPATH=.
OUT="$out" bash bench/time_cases.sh bench/c8_cases.txt 2
