#!/usr/bin/env bash
# On the device machine: compute-sanitizer memcheck, racecheck and synccheck on
# tests/sanitize_sample.py (its variants compiled first, in parallel). Logs under $OUT.
#   bash bench/sanitize.sh [seconds per tool]
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=${KGEN_CACHE_DIR:-/tmp/kgen-cache}
python3 -c "
import sys; sys.path.insert(0, '.')
from kgen.arch import resolve_arch
from kgen.tune.sweep import compile_space
from tests.sanitize_sample import SAMPLE
compile_space(SAMPLE, resolve_arch('native').name)" > "$out/precompile.log" 2>&1
for tool in memcheck racecheck synccheck; do
  timeout "${1:-90}" compute-sanitizer --tool "$tool" --report-api-errors no \
    python3 tests/sanitize_sample.py > "$out/sanitize-$tool.log" 2>&1
  echo "$tool exit $?: $(grep -c '^ok' "$out/sanitize-$tool.log") variants ok; $(tail -1 "$out/sanitize-$tool.log")"
done
