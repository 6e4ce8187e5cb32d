#!/usr/bin/env bash
# On the device machine: compute-sanitizer memcheck, racecheck and synccheck on a sample program
# (default tests/sanitize_sample.py; the SAMPLE variants it will run compiled first, in parallel). Logs under
# $OUT: PREFIX-memcheck.log etc. (default prefix: sanitize).
#   bash bench/sanitize.sh [seconds per tool] [sample program] [log prefix] [regex]
#   bash bench/sanitize.sh [seconds per tool] [regex]   (tests/sanitize_sample.py)
# regex: only the variants whose "spec config" names match.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=${KGEN_CACHE_DIR:-/tmp/kgen-cache}
if [[ "${2:-}" == *.py ]]; then
  sample=$2; prefix=${3:-sanitize}; regex=${4:-}
else
  sample=tests/sanitize_sample.py; prefix=sanitize; regex=${2:-}
fi
module=$(dirname "$sample" | tr / .).$(basename "$sample" .py)
precompile="$out/precompile.log" label=""
[ "$prefix" = sanitize ] || { precompile="$out/$prefix-precompile.log"; label="$prefix "; }
timeout 150 python3 -c "
import re, sys; sys.path.insert(0, '.')
from kgen.arch import resolve_arch
from kgen.tune.sweep import compile_space
from $module import SAMPLE
pick = [(s, c) for s, c in SAMPLE if re.search(sys.argv[1], f'{s.short_name()} {c.short_name()}')]
compile_space(pick, resolve_arch('native').name)" "$regex" > "$precompile" 2>&1
for tool in memcheck racecheck synccheck; do
  timeout "${1:-90}" compute-sanitizer --tool "$tool" --report-api-errors no \
    python3 "$sample" "$regex" > "$out/$prefix-$tool.log" 2>&1
  echo "$label$tool exit $?: $(grep -c '^ok' "$out/$prefix-$tool.log") variants ok; $(tail -1 "$out/$prefix-$tool.log")"
done
