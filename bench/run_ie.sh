#!/usr/bin/env bash
# On the device (twenty-fourth session, call 5): the final tree (draft tiles first) and database:
# the whole GPU suite, synccheck on the tree sample variants, the host cost per call.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
md5sum kgen/tuned/tuning.json templates/*/*.cuh templates/*/*/*.cuh templates/*/*.jinja kgen/mla/runner.py > "$out/tree.md5"
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
timeout 40 compute-sanitizer --tool synccheck --report-api-errors no python3 tests/sanitize_sample.py t16_p64_tree \
  > "$out/synccheck.log" 2>&1; echo "synccheck exit $?: $(grep -c '^ok' "$out/synccheck.log") ok; $(tail -1 "$out/synccheck.log")"
timeout 60 python3 bench/host_overhead.py > "$out/host_overhead.txt" 2>&1; cat "$out/host_overhead.txt"
