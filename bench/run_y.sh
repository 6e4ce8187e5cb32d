#!/usr/bin/env bash
# Prepared in the seventh session for the next device call: the H = 8 decode cases swept with the
# swapped-rows path (swap_rows, landed without a sweep: no device time was left) and the 4-warp
# decode cases with split_reduce, merged into the
# shipped database where faster (bench/merge_db.py), the shipped configs re-timed, the whole GPU
# suite, the sanitizer sample. At most 8 files under $OUT come back: everything else goes into
# $OUT/run-y.tar.gz; the merged database is $OUT/tuning.json (copy it to kgen/tuned/).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/y"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 150 python3 bench/sweep.py --out "$out/y/sweep" --db "$out/y/tuning-sw.json" --compute mma \
  --case kimi-tp8-decode-long --case kimi-tp8-decode-batch --heads-per-block 8 --swap-rows 1 \
  --num-warps 4 8 --col-groups 4 8 --mma-tiles 3x16 4x16 2x32 --min-blocks 0 1 3 \
  --qk-ahead 0 1 --split-softmax 0 --reps 10 > "$out/y/sweep.log" 2>&1
echo "swap sweep exit $?"
# split_reduce on the 4-warp decode cases (not swept since the copies changed)
cases=""
for c in kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-wide page1-decode; do
  cases="$cases --case $c"
done
timeout 150 python3 bench/sweep.py --out "$out/y/sweep-sr" --db "$out/y/tuning-sr.json" --compute mma $cases \
  --num-warps 4 --col-groups 4 --mma-tiles 3x16 4x16 --min-blocks 0 1 3 --qk-ahead 0 1 \
  --split-reduce 1 --split-softmax 0 --swap-rows 0 --reps 10 > "$out/y/sweep-sr.log" 2>&1
echo "split-reduce sweep exit $?"
grep -E "WRONG|wrong|Traceback" "$out/y/sweep.log" "$out/y/sweep-sr.log" | head -5
grep -E "^\S+ +(best|default) " "$out/y/sweep.log" "$out/y/sweep-sr.log"
dbs=$(ls "$out"/y/tuning-s?.json 2>/dev/null)
[ -n "$dbs" ] && python3 bench/merge_db.py kgen/tuned/tuning.json kgen/tuned/tuning.json $dbs > "$out/y/merge.log" 2>&1
cp kgen/tuned/tuning.json "$out/tuning.json"
timeout 90 python3 bench/time_shipped.py --reps 20 > "$out/y/shipped.jsonl" 2> "$out/y/shipped.err"
timeout 280 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs > "$out/y/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/y/gpu-tests.log")"; grep -E "^(FAILED|ERROR)" "$out/y/gpu-tests.log" | head
OUT="$out/y" bash bench/sanitize.sh 60 > "$out/y/sanitize.txt" 2>&1; cat "$out/y/sanitize.txt"
cat "$out/y/shipped.jsonl"
tar czf "$out/run-y.tar.gz" -C "$out" y && rm -rf "$out/y"
