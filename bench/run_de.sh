#!/usr/bin/env bash
# On the device (nineteenth session, final tree): the whole GPU suite; what seed-fp32-verify's
# fused split-KV merge costs at 33 splits (knock-out); ncu on the two compute-bound dense entries
# furthest from their targets, on the shipped code.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/gpu_suite.sh 360 "$out/gpu-tests.log"
timeout 100 python3 bench/knockout.py --reps 10 seed-fp32-verify@base seed-fp32-verify@nocomb \
  seed-fp32-verify:kv_splits=16@base seed-fp32-verify:kv_splits=16@nocomb > "$out/ko2.txt" 2>&1
tail -5 "$out/ko2.txt"
bash bench/stalls.sh dsv3-tp1-batch kimi-tp1-verify-tree > /dev/null 2>&1
grep -E "L1/TEX Cache|Issue Slots Busy|Eligible Warps|SM Frequency|Duration|L2 Cache Throughput|hmma_cycles_active.avg.pct_of_peak_sustained_active|wavefronts_mem_shared.sum.pct" "$out/stalls-details.txt"
md5sum kgen/tuned/tuning.json templates/mla/fma/tiled.cuh kgen/mla/heuristic.py
