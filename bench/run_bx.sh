#!/usr/bin/env bash
# On the device (fifteenth session): the knock-outs' skeleton taken apart (bench/knockout.py):
# what the loop costs with no copies and no MMAs, less its softmax, less its barriers; the
# combine's share at equal occupancy (min_blocks 3 holds three blocks per SM without it).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
sk=nocopy+noqk+nopv
runs=()
for c in kimi-tp1-batch dsv3-tp1-batch kimi-tp1-verify-tree kimi-tp8-verify-tree; do
  for k in base nosoft $sk $sk+nosoft $sk+nosoft+nobar; do runs+=("$c@$k"); done
done
for c in kimi-tp1-batch kimi-tp1-decode kimi-tp1-decode-64k; do
  for k in base nocomb $sk+nosoft+nobar $sk+nosoft+nobar+nocomb; do runs+=("$c:min_blocks=3@$k"); done
done
PYTHONPATH=. timeout 400 python3 bench/knockout.py --reps 10 "${runs[@]}" 2>"$out/knockout.err" | tee "$out/knockout.txt"
tail -3 "$out/knockout.err"
