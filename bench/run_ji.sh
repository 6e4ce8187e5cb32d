#!/usr/bin/env bash
# On the device (twenty-fifth session, call 10): ncu on main's shipped kernels of three cases
# furthest from their targets (the tree kernels changed since the nineteenth session's profile).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 420 bash bench/stalls.sh dsv3-tp1-batch kimi-tp1-verify-tree kimi-tp8-verify-batch > /dev/null 2>&1
echo "stalls exit $?"
grep -E "L1/TEX Cache|Issue Slots Busy|Eligible Warps|SM Frequency|Duration|L2 Cache Throughput|DRAM Throughput|hmma_cycles_active.avg.pct_of_peak_sustained_active|wavefronts_mem_shared.sum.pct" "$out/stalls-details.txt" | head -40
