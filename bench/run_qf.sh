#!/usr/bin/env bash
# On the device (thirty-first session): the GPU suite on main with the re-tuned database.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
