#!/usr/bin/env bash
# On the device: an A/B (or A/B/C) of kernel code on the shipped configs. Each TREE (a copy of
# the repository: ".", or a copy of another revision: `git archive REV | tar -x -C old`) runs
# bench/time_shipped.py on the CASEs (grid names, or CASE:field=value overrides), the trees
# alternating, ROUNDS times; JSON lines in $OUT/NAME/<label>-<round>.jsonl (label: "tree" for
# ".", else the folder's name), and a table of the medians per case and run on stdout
# (bench/ab_table.py). No CASE: every grid case; `--default` among the CASEs times the heuristic
# default instead of the shipped config.
#   bash bench/ab.sh NAME ROUNDS REPS TREE [TREE ...] -- [CASE ...]
set -uo pipefail
[ $# -ge 5 ] || { sed -n '2,9p' "$0"; exit 2; }
name=$1 rounds=$2 reps=$3; shift 3
trees=(); while [ "$1" != "--" ]; do trees+=("$1"); shift; done; shift
out=${OUT:-gpu-out}; mkdir -p "$out/$name"; out=$(cd "$out/$name" && pwd)
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=${KGEN_CACHE_DIR:-/tmp/kgen-cache}
for round in $(seq "$rounds"); do
  for tree in "${trees[@]}"; do
    label=$([ "$tree" = . ] && echo tree || basename "$tree")
    (cd "$tree" && PYTHONPATH=. timeout 550 python3 bench/time_shipped.py --reps "$reps" "$@" \
      > "$out/$label-$round.jsonl" 2> "$out/$label-$round.err")
    echo "$label round $round exit $?"
  done
done
python3 "$(dirname "$0")/ab_table.py" "$out"
grep -h "Traceback" "$out"/*.err | head -3
