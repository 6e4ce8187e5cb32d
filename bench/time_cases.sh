#!/usr/bin/env bash
# On the device: bench/time_shipped.py on the cases of CASEFILE (grid names or CASE:field=value
# overrides, one a line, '#' comments), ROUNDS times; JSON lines in $OUT/times/round-<n>.jsonl and a
# table of the medians per case and round (bench/ab_table.py) on stdout.
#   bash bench/time_cases.sh CASEFILE [ROUNDS]
set -uo pipefail
casefile=$1 rounds=${2:-2}
out=${OUT:-gpu-out}/times; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=${KGEN_CACHE_DIR:-/tmp/kgen-cache} PYTHONPATH=.
mapfile -t cases < <(grep -v '^#' "$casefile")
for round in $(seq "$rounds"); do
  timeout 200 python3 bench/time_shipped.py --reps 10 "${cases[@]}" > "$out/round-$round.jsonl" 2> "$out/round-$round.err"
  echo "round $round exit $?"
done
python3 bench/ab_table.py "$out"
