#!/usr/bin/env bash
# (Runs from a checkout of branch pdl-combine.) On the device (fourteenth session): the runner
# and MLA GPU tests, which draw pdl_combine configs (the whole suite did not fit the time left).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/gpu_suite.sh 150 "$out/gpu-tests.log" tests/test_runner_gpu.py tests/test_mla_gpu.py
