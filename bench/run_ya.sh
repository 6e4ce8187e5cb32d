#!/usr/bin/env bash
# On the device (thirty-ninth session): what binds the sparse kernels (bench/sparse_knockout.py):
# the tile loop without its compute, without DRAM's latency (hot rows), without the dequantization;
# and the rows of 1-3 tiles past the register-held one asked of L2 (a deeper gather pipeline).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
k=dsv32-sparse
runs=()
for c in h16-b128 h16-verify; do
  for ko in base nocompute hotrows nostore nocompute+hotrows pf1 pf2 pf3; do runs+=("$k-$c@$ko"); done
done
for c in h128-b1 h64-b1 h16-b1; do
  for ko in base hotrows nocompute pf1 pf2 pf3; do runs+=("$k-$c@$ko"); done
done
for s in 8 12; do for ko in base pf3; do runs+=("$k-h128-b1:kv_splits=$s@$ko"); done; done
for c in h16-b32 h64-b32 h128-b32 h64-b128 h128-b128; do
  for ko in base pf1 pf2 hotrows; do runs+=("$k-$c@$ko"); done
done
timeout 500 python3 bench/sparse_knockout.py --reps 20 "${runs[@]}" > "$out/knockout.txt" 2>&1
echo "knockout exit $?"; cat "$out/knockout.txt"
exit 0
