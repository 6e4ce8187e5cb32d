#!/usr/bin/env bash
# On the device: bench/knockout.py twice over the same runs, 20 reps each: round 1 with --check
# (each kernel's out and lse against the unedited kernel's), round 2 timing only. Raw output in
# $OUT/ko1.txt, ko2.txt (and .err); on stdout each run's line of round 1 with round 2's time
# appended, the 12-warp three-row block's fixed fields left out of the names.
#   bash bench/knockout_rounds.sh SECONDS RUN ...   (SECONDS: round 1's limit; round 2 gets 120)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
seconds=$1; shift
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=${KGEN_CACHE_DIR:-/tmp/kgen-cache}
timeout "$seconds" python3 bench/knockout.py --reps 20 --check "$@" > "$out/ko1.txt" 2> "$out/ko1.err"
echo "knockout round 1 exit $?"
timeout 120 python3 bench/knockout.py --reps 20 "$@" > "$out/ko2.txt" 2> "$out/ko2.err"
echo "knockout round 2 exit $?"
tail -3 "$out/ko1.err"
paste -d' ' <(cut -c1-250 "$out/ko1.txt") <(awk '{print $NF}' "$out/ko2.txt") \
  | sed 's/  */ /g; s/num_warps=12,col_groups=4,min_blocks=1,split_softmax=1,qk_ahead=0,//'
