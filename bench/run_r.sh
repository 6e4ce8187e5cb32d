#!/usr/bin/env bash
# On the device machine (sixth session, branch merge8 = main + issue8): the sparse GPU tests and
# the sweep's GPU test on the merged code, then compute-sanitizer on the sparse sample, in what
# device time was left. Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 140 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs tests/test_sparse_gpu.py \
  tests/test_sparse_tune_gpu.py tests/test_tune_gpu.py > "$out/merge8-gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/merge8-gpu-tests.log")"
bash bench/sanitize.sh 25 tests/sanitize_sparse_sample.py sanitize-sparse > "$out/sanitize-sparse.txt" 2>&1
cat "$out/sanitize-sparse.txt"
