#!/usr/bin/env bash
# On the device (thirty-ninth session): is the sparse batch loop bound by the shared-memory / L1 data
# pipe? Knock-outs of its ldmatrix traffic (K, V, both), of the scale loads, the held rows' loads
# with the streaming hint, and combinations with hot rows and no dequantization
# (bench/sparse_knockout.py).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
k=dsv32-sparse
runs=()
for c in h16-b128 h64-b32 h128-b128; do
  for ko in base noldk noldv noldk+noldv noscale ldcs hotrows hotrows+noldk+noldv nostore nostore+noldk+noldv nostore+hotrows; do
    runs+=("$k-$c@$ko")
  done
done
timeout 500 python3 bench/sparse_knockout.py --reps 20 "${runs[@]}" > "$out/knockout.txt" 2>&1
echo "knockout exit $?"; cat "$out/knockout.txt"
exit 0
