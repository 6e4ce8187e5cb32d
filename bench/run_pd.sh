#!/usr/bin/env bash
# On the device (thirtieth session, call 4): is the shared-memory pipe what binds the shipped
# compute-bound kernels? Knock-outs noldk / noldv drop most of the K and V ldmatrix traffic (136
# of the ~250 B a (row, position)) and keep every MMA. Two rounds.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=""
for round in 1 2; do
  for c in kimi-tp1-batch dsv3-tp1-batch kimi-tp1-decode-64k kimi-tp8-verify-tree kimi-tp1-verify-tree; do
    runs="$runs $c $c@noldk $c@noldv $c@noldk+noldv $c@nocopy"
  done
done
timeout 400 python3 bench/knockout.py --reps 20 $runs > "$out/nold.txt" 2> "$out/nold.err"
echo "exit $?"; tail -2 "$out/nold.err" | cut -c1-300; cut -c1-110 "$out/nold.txt"
