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
bash bench/gpu_suite.sh 150 "$out/al/gpu-tests.log" tests/test_sparse_gpu.py \
  tests/test_sparse_tune_gpu.py tests/test_tune_gpu.py
tar czf "$out/run-al.tar.gz" -C "$out" al && rm -rf "$out/al"
