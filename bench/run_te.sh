#!/usr/bin/env bash
# On the device (thirty-fourth session): compute-sanitizer memcheck / racecheck / synccheck on the
# specialised variants of tests/sanitize_sample.py, among them the one added for sm_120's new
# default (decode in 16-head groups, four stages, the PDL merge). Only those are precompiled.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
regex='_ws$'
timeout 100 python3 -c "
import re, sys; sys.path.insert(0, '.')
from kgen.arch import resolve_arch
from kgen.tune.sweep import compile_space
from tests.sanitize_sample import SAMPLE
pick = [(s, c) for s, c in SAMPLE if re.search('$regex', f'{s.short_name()} {c.short_name()}')]
compile_space(pick, resolve_arch('native').name)" > "$out/precompile.log" 2>&1
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool "$tool" --report-api-errors no \
    python3 tests/sanitize_sample.py "$regex" > "$out/sanitize-$tool.log" 2>&1
  echo "$tool exit $?: $(grep -c '^ok' "$out/sanitize-$tool.log") variants ok; $(tail -1 "$out/sanitize-$tool.log")"
done
