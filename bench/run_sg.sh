#!/usr/bin/env bash
# On the device (thirty-third session): sparse h16-b1 (the one entry whose re-tune read slower
# after item-rows) against main before it (abref/ = git archive 83b168a kgen templates
# bench/time_shipped.py bench/grid.json pyproject.toml), three alternating rounds of 30 reps.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/rows"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
for round in 1 2 3; do
  for tree in abref .; do
    label=$([ "$tree" = . ] && echo tree || echo abref)
    (cd "$tree" && PYTHONPATH=. timeout 60 python3 bench/time_shipped.py --reps 30 dsv32-sparse-h16-b1 \
      > "$out/rows/$label-$round.jsonl" 2> "$out/rows/$label-$round.err")
  done
done
python3 bench/ab_table.py "$out/rows" | tee "$out/ab.txt"
