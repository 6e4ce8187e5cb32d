#!/usr/bin/env bash
# On the device (twenty-fifth session, call 3): how close the compute-bound cases' KV copies
# alone come to their time: knock-outs on main's shipped configs (copies only; copies and softmax; no copies; kimi-tp1-decode ships the specialised kernel, which nosoft does not edit).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
args=()
for c in dsv3-tp1-batch kimi-tp1-batch kimi-tp1-decode-64k kimi-tp1-verify-tree; do
  args+=("$c" "$c@noqk+nopv+nosoft" "$c@noqk+nopv" "$c@nocopy")
done
timeout 400 python3 bench/knockout.py --reps 20 "${args[@]}" > "$out/knockout.txt" 2>&1
echo "knockout exit $?"; cat "$out/knockout.txt" | tail -20
