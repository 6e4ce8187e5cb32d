#!/usr/bin/env bash
# On the device machine (sixth session): the 4-warp decode cases again, with min_blocks 2-4. The
# main sweep (run_o.sh) found their old winners 40% slower: the same code took 173 registers, not
# 167, and 3 blocks of 128 threads no longer fit an SM's registers. Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases=""
for c in kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-wide page1-decode; do
  cases="$cases --case $c"
done
timeout ${1:-300} python3 bench/sweep.py --out "$out/sweep-mb" --db "$out/tuning-mb.json" --compute mma $cases \
  --num-warps 4 --col-groups 4 --mma-tiles 3x16 4x16 --min-blocks 2 3 4 --qk-ahead 0 1 \
  --split-softmax 0 1 --reps 10 > "$out/sweep-mb.log" 2>&1
echo "sweep exit $?"
cp "$out/sweep-mb/results.csv" "$out/results-mb.csv" 2>/dev/null
grep -E "WRONG|wrong|Traceback" "$out/sweep-mb.log" | head -5
grep -E "^\S+ +(best|default) " "$out/sweep-mb.log"
