#!/usr/bin/env bash
# Ninth session, last device call: both tensor-core families share one online softmax
# (templates/mla/mma/online_softmax.cuh; the dense SASS is unchanged, the sparse SASS not). The ten
# sparse entries re-tuned and written over the shipped database ($OUT/tuning.json: copy it to
# kgen/tuned/); the sparse GPU tests with it.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/al"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/retune.sh 200 "$out/al" --family sparse
cp kgen/tuned/tuning.json "$out/tuning.json"
timeout 150 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs tests/test_sparse_gpu.py \
  tests/test_sparse_tune_gpu.py tests/test_tune_gpu.py > "$out/al/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/al/gpu-tests.log")"; grep -E "^(FAILED|ERROR)" "$out/al/gpu-tests.log" | head
tar czf "$out/run-al.tar.gz" -C "$out" al && rm -rf "$out/al"
