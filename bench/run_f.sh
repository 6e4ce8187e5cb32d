#!/usr/bin/env bash
# On the device machine (fourth session): (1) next-latency's kernels against main's on the same
# shipped configs (timed and traced; the branch's tree is copied to wt-next/), (2) 16-warp blocks
# of 32 and 64 rows on the cases with several head groups (H >= 64, the trees). Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
b1="kimi-tp8-decode-long kimi-tp1-decode kimi-tp1-decode-64k kimi-tp8-verify-tree dsv3-tp8-decode-batch"
sweep() {  # name, timeout, sweep args...
  local name=$1 limit=$2; shift 2
  PYTHONPATH=. timeout "$limit" python3 bench/sweep.py --out "$out/$name" --db "$out/$name.json" \
    --compute mma --num-warps 16 --min-blocks 1 --reps 10 "$@" > "$out/$name.log" 2>&1
  echo "$name exit $?"
}
( cd wt-next && PYTHONPATH=. timeout 100 python3 bench/trace.py --compile > "$out/next-compile.log" 2>&1 ) &
PYTHONPATH=. timeout 100 python3 bench/trace.py --compile > "$out/main-compile.log" 2>&1
wait
for tree in . wt-next; do
  tag=$([ "$tree" = . ] && echo main || echo next)
  ( cd $tree && PYTHONPATH=. timeout 60 python3 bench/trace.py $b1 > "$out/trace-$tag.txt" 2>&1
    PYTHONPATH=. timeout 90 python3 bench/time_shipped.py $b1 > "$out/time-$tag.txt" 2> "$out/time-$tag.log" )
done
sweep h64 200 --case kimi-tp1-decode --case kimi-tp1-decode-64k --case kimi-tp1-batch \
  --case dsv3-tp1-batch --heads-per-block 32 64 --col-groups 4 8 16 --split-reduce 0 1 \
  --mma-tiles 2x16 3x16 4x16
sweep trees 150 --case kimi-tp8-verify-tree --case kimi-tp8-verify-batch \
  --case kimi-tp1-verify-tree --heads-per-block 2 4 8 --col-groups 4 8 16 --split-reduce 0 1 \
  --mma-tiles 3x16 4x16
for f in trace-main trace-next time-main time-next; do echo "== $f"; cat "$out/$f.txt"; done
for f in h64 trees; do echo "== $f"; grep -E "^\S+ +hb|best|wrong|fail" "$out/$f.log" | tail -30; done
