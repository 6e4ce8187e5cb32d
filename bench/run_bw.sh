#!/usr/bin/env bash
# On the device (fifteenth session): knock-out timings (bench/knockout.py) of the shipped
# configs of the cases furthest from their targets, to find what binds the loop.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=()
for c in kimi-tp1-batch dsv3-tp1-batch; do
  for k in base nocopy noqk nopv nobar noexp nocomb noqk+nopv nocopy+noqk+nopv; do runs+=("$c@$k"); done
done
for k in base nocopy noqk nopv nobar noqk+nopv nocopy+noqk+nopv; do runs+=("kimi-tp1-verify-tree@$k"); done
for k in base nocopy noqk nopv nocomb; do runs+=("kimi-tp1-decode@$k"); done
for k in base nocopy noqk+nopv; do runs+=("dsv3-tp8-decode-batch@$k"); done
for k in base nocopy noqk nopv nobar; do runs+=("kimi-tp8-verify-tree@$k"); done
PYTHONPATH=. timeout 400 python3 bench/knockout.py --reps 10 "${runs[@]}" 2>"$out/knockout.err" | tee "$out/knockout.txt"
tail -3 "$out/knockout.err"
