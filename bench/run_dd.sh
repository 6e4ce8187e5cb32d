#!/usr/bin/env bash
# On the device (nineteenth session): the 16-warp tiled block (hk_t16/: pairs of warps of 8 rows,
# 64 accumulators a lane) against the float64 reference (its tiled tests), then seed-fp32-verify
# timed from both trees at depths 2-4 and 16 / 33 splits.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
(cd hk_t16 && PYTHONPATH=. timeout 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_tiled_gpu.py > "$out/t16-tests.log" 2>&1; echo "t16 tiled tests exit $?: $(tail -1 "$out/t16-tests.log")")
grep -E "Error|error|assert" "$out/t16-tests.log" | head -5
for st in 2 3 4; do for s in 16 33; do
  (cd hk_t16 && PYTHONPATH=. timeout 100 python3 bench/time_shipped.py --reps 10 "seed-fp32-verify:num_warps=16,smem_stages=$st,kv_splits=$s" >> "$out/t16.jsonl" 2>> "$out/t16.err")
done; done
PYTHONPATH=. timeout 100 python3 bench/time_shipped.py --reps 10 seed-fp32-verify:kv_splits=33 seed-fp32-verify:smem_stages=2,kv_splits=33 >> "$out/t8.jsonl" 2>> "$out/t8.err"
cat "$out/t16.jsonl" "$out/t8.jsonl" | cut -c1-200; tail -2 "$out/t16.err"
