#!/usr/bin/env bash
# On the device (twenty-ninth session, call 4): the fused merge's steps traced per block
# (bench/merge_trace.py: knock-ins gridbar / gridbarsh + trace), then the two merges and the
# barrier alone timed again (bench/knockout.py, two rounds).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=""
for c in kimi-tp8-decode-long kimi-tp1-decode kimi-tp1-decode-64k; do
  runs="$runs $c:pdl_combine=0@gridbar+trace $c:pdl_combine=0@gridbarsh+trace"
done
timeout 300 python3 bench/merge_trace.py $runs > "$out/trace.txt" 2> "$out/trace.err"
echo "exit $?"; tail -3 "$out/trace.err" | cut -c1-300; cat "$out/trace.txt"
