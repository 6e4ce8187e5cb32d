#!/usr/bin/env bash
# On the device machine (third session, last call): the whole GPU suite on the code submitted.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout "${1:-220}" python3 -m pytest -m gpu -q -n 15 -p no:cacheprovider --maxfail=40 -rfEs \
  -W ignore::pytest.PytestWarning > "$out/gpu-tests.log" 2>&1
echo "tests exit $?"; grep -E "^FAILED|^ERROR|passed|failed" "$out/gpu-tests.log" | tail -20
