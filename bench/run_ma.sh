#!/usr/bin/env bash
# For the next session's first device call: why the float64 sparse oracle's GPU and CPU results
# were 1.65e-10 apart once (ld/; rounding allows ~1e-12): bench/oracle_repeat.py, then the test
# alone five times and the sparse GPU test file once.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 60 python3 bench/oracle_repeat.py > "$out/oracle_repeat.txt" 2>&1; echo "oracle exit $?"
cat "$out/oracle_repeat.txt"
for i in 1 2 3 4 5; do
  timeout 60 python3 -m pytest -q -p no:cacheprovider -m gpu \
    "tests/test_sparse_tune_gpu.py::test_the_sparse_oracle_on_the_gpu_matches_it_on_the_cpu" 2>&1 | tail -1
done
bash bench/gpu_suite.sh 200 "$out/sparse-tune-tests.log" tests/test_sparse_tune_gpu.py
