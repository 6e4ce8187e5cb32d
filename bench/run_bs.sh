#!/usr/bin/env bash
# On the device (fourteenth session, main's final tree): the whole GPU suite and host cost.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
PYTHONPATH=. timeout 120 python3 bench/host_overhead.py > "$out/host_overhead.txt" 2>&1; tail -12 "$out/host_overhead.txt"
md5sum kgen/tuned/tuning.json templates/mla/combine.cuh templates/mla/common.cuh kgen/mla/layout.py
