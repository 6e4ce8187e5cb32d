#!/usr/bin/env bash
# On the device (twenty-fourth session, call 6): compute-sanitizer's three tools on the sample's
# causal and 6-token tree variants (q.K ahead among them), the masks' other draft-first paths.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
for tool in memcheck racecheck synccheck; do
  timeout 50 compute-sanitizer --tool $tool --report-api-errors no python3 tests/sanitize_sample.py 'causal|t6_p16_tree' \
    > "$out/$tool.log" 2>&1; echo "$tool exit $?: $(grep -c '^ok' "$out/$tool.log") ok; $(tail -1 "$out/$tool.log")"
done
