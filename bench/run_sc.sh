#!/usr/bin/env bash
# On the device (thirty-third session): knock-out nohandoff (racy: each role of a specialised
# block runs its tiles at its own pace) against the shipped kernel, the six specialised entries,
# two rounds (the second in the reverse order).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=""; rev=""
for c in kimi-tp1-decode kimi-tp8-decode-long page1-decode kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-wide; do
  runs="$runs $c $c@nohandoff"; rev="$c@nohandoff $c $rev"
done
timeout 250 python3 bench/knockout.py --reps 20 $runs > "$out/nohandoff-1.txt" 2>&1
echo "round 1 exit $? at ${SECONDS}s"; cat "$out/nohandoff-1.txt"
timeout $(( 560 - SECONDS )) python3 bench/knockout.py --reps 20 $rev > "$out/nohandoff-2.txt" 2>&1
echo "round 2 exit $? at ${SECONDS}s"; cat "$out/nohandoff-2.txt"
