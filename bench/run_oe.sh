#!/usr/bin/env bash
# On the device (twenty-ninth session, call 5): the fused merge's loads traced (bench/merge_trace.py)
# under both flushes, with the loads done twice (knock-in twice: is the first pass slow because it
# is first?).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=""
for c in kimi-tp8-decode-long kimi-tp1-decode kimi-tp1-decode-64k; do
  runs="$runs $c:pdl_combine=0@gridbar+trace $c:pdl_combine=0@gridbar+twice+trace"
done
for f in write read; do
  timeout 250 python3 bench/merge_trace.py --flush $f $runs > "$out/trace-$f.txt" 2> "$out/trace-$f.err"
  echo "exit $?"; tail -3 "$out/trace-$f.err" | cut -c1-300; cat "$out/trace-$f.txt"
done
