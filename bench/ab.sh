#!/usr/bin/env bash
# On the device: an A/B (or A/B/C) of kernel code on the shipped configs. Each TREE (a copy of
# the repository: ".", or an untracked copy such as hack/) runs bench/time_shipped.py on the
# CASES (grid names, or CASE:field=value overrides), the trees alternating, ROUNDS times; JSON
# lines in $OUT/NAME/<label>-<round>.jsonl (label: "tree" for ".", else the folder's name), and
# a table of the medians per case and run on stdout. No CASE: time_shipped.py's default, every
# 16-bit dense case; `--default` among the CASEs times the heuristic default instead.
#   bash bench/ab.sh NAME ROUNDS REPS TREE [TREE ...] -- [CASE ...]
set -uo pipefail
name=$1 rounds=$2 reps=$3; shift 3
trees=(); while [ "$1" != "--" ]; do trees+=("$1"); shift; done; shift
out=${OUT:-gpu-out}; mkdir -p "$out/$name"; out=$(cd "$out/$name" && pwd)
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=${KGEN_CACHE_DIR:-/tmp/kgen-cache}
for round in $(seq "$rounds"); do
  for tree in "${trees[@]}"; do
    label=$([ "$tree" = . ] && echo tree || basename "$tree")
    (cd "$tree" && PYTHONPATH=. timeout 200 python3 bench/time_shipped.py --reps "$reps" "$@" \
      > "$out/$label-$round.jsonl" 2> "$out/$label-$round.err")
    echo "$label round $round exit $?"
  done
done
python3 bench/ab_table.py "$out"
grep -h "Traceback" "$out"/*.err | head -3
