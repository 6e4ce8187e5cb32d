#!/usr/bin/env bash
# On the device machine (sixth session): the sweep that ships kgen/tuned/tuning.json after the
# tile copies were dealt over q.K^T (8+ warps) and q's rope k steps moved to shared memory where
# registers are tight (run_j's axes). Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout ${1:-540} python3 bench/sweep.py --out "$out/sweep" --db "$out/tuning.json" --compute mma \
  --num-warps 4 8 16 --col-groups 4 8 --mma-tiles 3x16 4x16 2x32 --min-blocks 0 1 --qk-ahead 0 1 \
  --split-softmax 0 1 --reps 10 > "$out/sweep.log" 2>&1
echo "sweep exit $?"
cp "$out/sweep/results.csv" "$out/results.csv" 2>/dev/null
grep -E "WRONG|wrong|Traceback" "$out/sweep.log" | head -5
grep -E "^\S+ +(best|default) " "$out/sweep.log"
