#!/usr/bin/env bash
# On the device machine (sixth session), the last run: the 4-warp decode cases swept again with
# KV split candidates from each kernel's occupancy, merged into the shipped database (the faster
# entry per case), the shipped configs timed, then the GPU suite. Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases=""
for c in kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-wide page1-decode; do
  cases="$cases --case $c"
done
timeout 170 python3 bench/sweep.py --out "$out/sweep-w4" --db "$out/tuning-w4.json" --compute mma $cases \
  --num-warps 4 --col-groups 4 --mma-tiles 3x16 4x16 --min-blocks 0 1 3 --qk-ahead 0 1 \
  --split-softmax 0 1 --reps 10 > "$out/sweep-w4.log" 2>&1
echo "sweep exit $?"
cp "$out/sweep-w4/results.csv" "$out/results-w4.csv" 2>/dev/null
grep -E "WRONG|wrong|Traceback" "$out/sweep-w4.log" | head -5
grep -E "^\S+ +best " "$out/sweep-w4.log"
[ -s "$out/tuning-w4.json" ] && python3 bench/merge_db.py kgen/tuned/tuning.json kgen/tuned/tuning.json "$out/tuning-w4.json" > "$out/merge.log" 2>&1
cp kgen/tuned/tuning.json "$out/tuning-merged.json"
timeout 90 python3 bench/time_shipped.py --reps 20 > "$out/shipped.jsonl" 2> "$out/shipped.err"; echo "shipped exit $?"
timeout 270 python3 -m pytest -m gpu -q -n 12 -p no:cacheprovider -rfEs > "$out/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/gpu-tests.log")"
grep -E "^(FAILED|ERROR)" "$out/gpu-tests.log" | head -10
python3 -c "
import json
for line in open('$out/shipped.jsonl'):
    r = json.loads(line); print(f\"{r['case']:24} {r['config']:40} {r.get('median_us') or 0:8.1f} {r['status']}\")"
