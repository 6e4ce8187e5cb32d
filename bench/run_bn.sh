#!/usr/bin/env bash
# On the device (thirteenth session, main's final tree): the whole GPU suite, host cost
# (bench/host_overhead.py) and the tree-versus-causal bound (bench/tree_vs_causal.py).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
PYTHONPATH=. timeout 120 python3 bench/host_overhead.py > "$out/host_overhead.txt" 2>&1; tail -12 "$out/host_overhead.txt"
PYTHONPATH=. timeout 120 python3 bench/tree_vs_causal.py > "$out/tree_vs_causal.txt" 2>&1; tail -8 "$out/tree_vs_causal.txt"
md5sum kgen/tuned/tuning.json templates/mla/combine.cuh templates/mla/mma/attention.cuh kgen/tune/space.py
