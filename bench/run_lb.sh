#!/usr/bin/env bash
# On the device (twenty-seventh session, call 3), branch ragged-heads after call 2 (la/: 156 of 157;
# test_run_allocates_nothing_given_outputs saw the bytes held fall during run, another tensor
# freed meanwhile: it now counts the allocator's allocations instead). The two changed GPU test
# files, the runner's twice.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
git ls-files -s templates kgen tests | md5sum > "$out/tree.md5"
bash bench/gpu_suite.sh 200 "$out/gpu-tests.log" tests/test_mla_gpu.py tests/test_runner_gpu.py
bash bench/gpu_suite.sh 100 "$out/gpu-tests-runner2.log" tests/test_runner_gpu.py
