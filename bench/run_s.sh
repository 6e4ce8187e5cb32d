#!/usr/bin/env bash
# On the device machine, for branch land-next (= main + issue8 + default-occupancy, prepared in
# the sixth session without device time left): the whole GPU suite (dense and sparse), then
# compute-sanitizer on both samples. If all pass, main can fast-forward to it. Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 420 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs > "$out/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/gpu-tests.log")"
grep -E "^(FAILED|ERROR)" "$out/gpu-tests.log" | head -10
bash bench/sanitize.sh 60 > "$out/sanitize.txt" 2>&1; cat "$out/sanitize.txt"
bash bench/sanitize.sh 30 tests/sanitize_sparse_sample.py sanitize-sparse > "$out/sanitize-sparse.txt" 2>&1
cat "$out/sanitize-sparse.txt"
