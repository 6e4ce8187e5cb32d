#!/usr/bin/env bash
# On the device (thirteenth session), from a checkout of branch warp-dequant (main has no
# dequant='warp'): the sparse family's dequant='warp'
# against the shipped configs (warp_cases_a.txt), and at 3 stages, against 'shared', and in 8-warp
# blocks (warp_cases_b.txt); one round each (bench/time_cases.sh), then the sparse GPU tests.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
OUT="$out/a" bash bench/time_cases.sh bench/warp_cases_a.txt 1
OUT="$out/b" bash bench/time_cases.sh bench/warp_cases_b.txt 1
export PYTHONPATH=. KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 240 python3 -m pytest -q -x -m gpu tests/test_sparse_gpu.py > "$out/sparse-gpu-tests.log" 2>&1
echo "sparse gpu tests exit $?"; tail -3 "$out/sparse-gpu-tests.log"
cd "$out" && tar czf all.tar.gz a b && rm -rf a b
