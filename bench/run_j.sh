#!/usr/bin/env bash
# On the device machine (fifth session): compute-sanitizer on the sample variants whose barriers
# changed (the split softmax's and split reduce's are now their row group's own), then the sweep
# that ships kgen/tuned/tuning.json (run_g's axes plus 8 column groups). Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/sanitize.sh 60 "_c8|_sr|w8_n32_mma_c4_mb1_ss" > "$out/sanitize.txt" 2>&1
cat "$out/sanitize.txt"
timeout ${1:-420} python3 bench/sweep.py --out "$out/sweep" --db "$out/tuning.json" --compute mma \
  --num-warps 4 8 16 --col-groups 4 8 --mma-tiles 3x16 4x16 2x32 --min-blocks 0 1 --qk-ahead 0 1 \
  --split-softmax 0 1 --reps 10 > "$out/sweep.log" 2>&1
echo "sweep exit $?"
grep -E "WRONG|wrong|Traceback" "$out/sweep.log" | head -5
grep -E "^\S+ +(best|default) " "$out/sweep.log"
