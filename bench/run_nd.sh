#!/usr/bin/env bash
# On the device (twenty-eighth session, call 4): the PDL trigger at the start of a block's last
# tile (knock-ins tailtrig / tailtrigws, bench/knockout.py) against the shipped trigger after the
# partials, two rounds alternating.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=""
for round in 1 2; do
  runs="$runs kimi-tp1-decode-64k kimi-tp1-decode-64k@tailtrig kimi-tp8-verify-tree kimi-tp8-verify-tree@tailtrig"
  runs="$runs kimi-tp1-decode kimi-tp1-decode@tailtrigws kimi-tp8-decode-long kimi-tp8-decode-long@tailtrigws"
  runs="$runs dsv3-tp8-decode-batch dsv3-tp8-decode-batch@tailtrigws"
done
timeout 400 python3 bench/knockout.py --reps 30 $runs > "$out/tailtrig.txt" 2> "$out/tailtrig.err"
echo "exit $?"; tail -2 "$out/tailtrig.err" | cut -c1-300; cat "$out/tailtrig.txt"
