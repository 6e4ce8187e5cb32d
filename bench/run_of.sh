#!/usr/bin/env bash
# On the device (twenty-ninth session, call 6): the fused merge traced (bench/merge_trace.py) with
# L2 not flushed, against the write flush: do the merge's steps cost what they cost because the
# flush evicted their code and data?
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=""
for c in kimi-tp8-decode-long kimi-tp1-decode; do
  runs="$runs $c:pdl_combine=0@gridbar+trace $c:pdl_combine=0@gridbar+twice+trace $c:pdl_combine=0@gridbarsh+trace"
done
timeout 250 python3 bench/merge_trace.py --flush none $runs > "$out/trace-none.txt" 2> "$out/trace-none.err"
echo "exit $?"; tail -3 "$out/trace-none.err" | cut -c1-300; cat "$out/trace-none.txt"
