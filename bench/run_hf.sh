#!/usr/bin/env bash
# On the device (twenty-third session): after reverting the in-kernel bool mask (run_he: the tree
# kernels' registers rose on NVRTC 13.0), the two GPU test files whose tests this session added
# to (a bool mask in a graph, bool masks of other strides), on main's code.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
md5sum kgen/tuned/tuning.json templates/*/*.cuh templates/*/*/*.cuh templates/*/*.jinja kgen/mla/runner.py > "$out/tree.md5"
bash bench/gpu_suite.sh 150 "$out/gpu-tests.log" tests/test_runner_gpu.py tests/test_mla_inputs_gpu.py
