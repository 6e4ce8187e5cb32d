#!/usr/bin/env bash
# On the device (twenty-ninth session, call 2): where the fused merge's time goes, by knock-outs of
# the gridbar knock-in (bench/knockout.py): the main loop alone (nocomb+nostore), + the partials'
# stores (nocomb), + the barrier (gridbar+barrieronly), + the merge (gridbar); the merge without
# the barrier's wait (gridbar+nobarrier, racy). Two rounds alternating.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=""
for round in 1 2; do
  for c in kimi-tp8-decode-long kimi-tp1-decode kimi-tp1-decode-64k; do
    f=$c:pdl_combine=0
    runs="$runs $c $f@nocomb+nostore $f@nocomb $f@gridbar+barrieronly $f@gridbar $f@gridbar+nobarrier"
  done
done
timeout 500 python3 bench/knockout.py --reps 30 $runs > "$out/parts.txt" 2> "$out/parts.err"
echo "exit $?"; tail -3 "$out/parts.err" | cut -c1-300; cat "$out/parts.txt"
