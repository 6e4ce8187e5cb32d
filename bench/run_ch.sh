#!/usr/bin/env bash
# On the device (sixteenth session): the specialized sample under racecheck and synccheck with the
# hand-off on barrier 0 (non-aligned barrier.sync), against named barrier 2 before (run_cg.sh).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
for tool in racecheck synccheck memcheck; do
  timeout 120 compute-sanitizer --tool $tool --report-api-errors no python3 tests/sanitize_sample.py _ws > "$out/$tool-ws.log" 2>&1
  echo "$tool ws: $(grep -c '^ok' $out/$tool-ws.log) ok; $(tail -1 $out/$tool-ws.log)"
done
