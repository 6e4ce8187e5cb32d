#!/usr/bin/env bash
# On the device (thirty-fourth session): the sparse h16-b1 question the last session left open.
# Its re-tune after item-rows read 12.4 -> 12.7 us (splits 64 -> 128) in a run whose untouched
# variants drifted 0.15-0.27 us slower too. Three alternating rounds of 30 reps: main before
# item-rows (abref/ = git archive 83b168a kgen templates bench/time_shipped.py bench/grid.json
# pyproject.toml: the old kernel at its shipped 64 splits), this tree at its shipped 128 splits,
# and this tree at 64 splits (kernel and split count apart). Then bench/host_overhead.py (issue 10).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/ab.sh h16b1 3 30 abref . -- dsv32-sparse-h16-b1 dsv32-sparse-h16-b1:kv_splits=64 \
  dsv32-sparse-h64-b1 dsv32-sparse-h128-b1 2>&1 | tee "$out/h16b1.txt"
PYTHONPATH=. timeout 120 python3 bench/host_overhead.py 2>&1 | tee "$out/host_overhead.txt"
