#!/usr/bin/env bash
# Prepared in the seventh session for the next device call: the H = 8 decode cases swept with the
# swapped-rows path (swap_rows, landed without a sweep: no device time was left), merged into the
# shipped database where faster (bench/merge_db.py), the shipped configs re-timed, the whole GPU
# suite, the sanitizer sample. At most 8 files under $OUT come back: everything else goes into
# $OUT/run-y.tar.gz; the merged database is $OUT/tuning.json (copy it to kgen/tuned/).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/y"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 200 python3 bench/sweep.py --out "$out/y/sweep" --db "$out/y/tuning-sw.json" --compute mma \
  --case kimi-tp8-decode-long --case kimi-tp8-decode-batch --heads-per-block 8 --swap-rows 1 \
  --num-warps 2 4 8 --col-groups 2 4 8 --mma-tiles 3x16 4x16 5x16 2x32 --min-blocks 0 1 2 3 4 \
  --qk-ahead 0 1 --split-softmax 0 --reps 10 > "$out/y/sweep.log" 2>&1
echo "sweep exit $?"; grep -E "WRONG|wrong|Traceback" "$out/y/sweep.log" | head -5
grep -E "^\S+ +(best|default) " "$out/y/sweep.log"
[ -s "$out/y/tuning-sw.json" ] && python3 bench/merge_db.py kgen/tuned/tuning.json kgen/tuned/tuning.json \
  "$out/y/tuning-sw.json" > "$out/y/merge.log" 2>&1
cp kgen/tuned/tuning.json "$out/tuning.json"
timeout 90 python3 bench/time_shipped.py --reps 20 > "$out/y/shipped.jsonl" 2> "$out/y/shipped.err"
timeout 280 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs > "$out/y/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/y/gpu-tests.log")"; grep -E "^(FAILED|ERROR)" "$out/y/gpu-tests.log" | head
OUT="$out/y" bash bench/sanitize.sh 60 > "$out/y/sanitize.txt" 2>&1; cat "$out/y/sanitize.txt"
cat "$out/y/shipped.jsonl"
tar czf "$out/run-y.tar.gz" -C "$out" y && rm -rf "$out/y"
