#!/usr/bin/env bash
# On the device machine (fifth session), the checks of the code submitted: the whole GPU suite
# beside, when wt8-run/ holds a copy of branch issue8 (git archive), that branch's sparse GPU
# tests; then compute-sanitizer on the sparse fp8 sample variants (their kernels changed).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
PYTHONPATH=. KGEN_CACHE_DIR=/tmp/kgen-cache timeout ${1:-300} python3 -m pytest -m gpu -q -n 10 \
  -p no:cacheprovider -rfEs > "$out/gpu-tests.log" 2>&1 &
main=$!
if [ -d wt8-run ]; then
  (cd wt8-run && PYTHONPATH=. KGEN_CACHE_DIR=/tmp/kgen-cache8 KGEN_HYPOTHESIS_PROFILE=device \
    timeout ${1:-300} python3 -m pytest -m gpu -v -n 6 -p no:cacheprovider -rfEs \
    tests/test_sparse_gpu.py tests/test_sparse_tune_gpu.py > "$out/sparse-gpu-tests.log" 2>&1)
  echo "sparse gpu tests exit $?: $(tail -1 "$out/sparse-gpu-tests.log")"
  grep -E "^(FAILED|ERROR)" "$out/sparse-gpu-tests.log" | head -10
fi
wait $main; echo "gpu tests exit $?: $(tail -1 "$out/gpu-tests.log")"
grep -E "^(FAILED|ERROR)" "$out/gpu-tests.log" | head -10
if [ -d wt8-run ]; then
  (cd wt8-run && OUT="$out" KGEN_CACHE_DIR=/tmp/kgen-cache8 PYTHONPATH=. \
    bash bench/sanitize.sh ${2:-30} tests/sanitize_sparse_sample.py sanitize-sparse > "$out/sanitize-sparse.txt" 2>&1)
  cat "$out/sanitize-sparse.txt"
fi
