#!/usr/bin/env bash
# On the device (twenty-fifth session, call 6): the first head group prefetching the KV rows
# into L2 4 or 8 tiles ahead for the head groups that follow (knock-ins pfl2, pfl2x8), on the
# multi-head-group cases of the row path; two rounds.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
args=()
for round in 1 2; do
  for c in dsv3-tp1-batch kimi-tp1-batch kimi-tp1-decode-64k kimi-tp1-verify-tree; do
    args+=("$c" "$c@pfl2" "$c@pfl2x8")
  done
done
timeout 400 python3 bench/knockout.py --reps 20 "${args[@]}" > "$out/knockout.txt" 2>&1
echo "knockout exit $?"; tail -25 "$out/knockout.txt"
