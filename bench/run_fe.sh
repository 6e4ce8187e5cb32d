#!/usr/bin/env bash
# On the device (twenty-first session): the whole GPU suite on the final tree, then ncu on the
# re-tuned h16-b128 and h128-b128 sparse kernels (split softmax).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
md5sum kgen/tuned/tuning.json templates/mla_sparse/*.cuh templates/mla/mma/*.cuh > "$out/tree.md5"
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"; echo "suite exit $?: $(tail -1 "$out/gpu-tests.log")"
timeout 200 bash bench/stalls.sh dsv32-sparse-h16-b128 dsv32-sparse-h128-b128 > "$out/stalls.log" 2>&1
echo "stalls exit $?"; grep -E "launch|Issue Slots Busy|Eligible Warps|Registers Per|Achieved Active|hmma|wavefronts_mem_shared.sum.pct|dram__bytes_read.sum.per|Duration|stall (short|selected|wait|long|barrier)" "$out/stalls-details.txt"
