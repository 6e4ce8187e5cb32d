#!/usr/bin/env bash
# On the device (twenty-ninth session, call 3): knock-in gridbarsh (run as "gridbar" then) with the merge's slices in
# neighbouring lanes, merged by shuffles (no shared-memory loop over slices), against the shipped
# PDL merge, the fused merge as it is, and the kernel without a merge; checked against the
# unedited kernel after the timed launches. Two rounds alternating.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=""
for round in 1 2; do
  for c in kimi-tp8-decode-long kimi-tp1-decode kimi-tp1-decode-64k kimi-tp8-verify-tree dsv3-tp8-decode-batch; do
    f=$c:pdl_combine=0
    runs="$runs $c $f $f@nocomb $f@gridbar+barrieronly $f@gridbarsh"
  done
done
timeout 500 python3 bench/knockout.py --check --reps 30 $runs > "$out/lean.txt" 2> "$out/lean.err"
echo "exit $?"; tail -3 "$out/lean.err" | cut -c1-300; cat "$out/lean.txt" | cut -c1-150
