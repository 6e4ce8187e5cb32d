#!/usr/bin/env bash
# Twelfth session, device call bd: 8-warp blocks of 8 column groups (32 accumulator registers a
# thread instead of 64) on the H >= 64 decode cases, at 16 or 24 warps per SM, against the shipped
# three 4-warp blocks per SM, as time_shipped.py overrides (bench/c8_cases.txt), two rounds.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache PYTHONPATH=.
mapfile -t cases < <(grep -v '^#' bench/c8_cases.txt)
for round in 1 2; do
  timeout 200 python3 bench/time_shipped.py --reps 10 "${cases[@]}" > "$out/occ-$round.jsonl" 2> "$out/occ-$round.err"
  echo "round $round exit $?"
done
python3 bench/occupancy_table.py "$out"/occ-1.jsonl "$out"/occ-2.jsonl
