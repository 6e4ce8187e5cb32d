#!/usr/bin/env bash
# On the device (twenty-eighth session, call 1): the float64 sparse oracle's GPU/CPU gap
# (run_ma.sh: bench/oracle_repeat.py, the test alone five times, the sparse tuning tests), then
# every sparse case's shipped config at bf16 and at fp16, two rounds alternating: what the bf16
# dequantization's extra conversions cost (fp16 takes one instruction per two e4m3 values, bf16
# four).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
OUT=$out bash bench/run_ma.sh
cases=$(python3 -c "import json; print(' '.join(e['name'] for e in json.load(open('kgen/tune/grid.json'))['cases'] if 'topk' in e))")
for round in 1 2; do
  for dtype in bfloat16 float16; do
    timeout 200 python3 bench/time_shipped.py --reps 20 --dtype $dtype $cases > "$out/dtype-$dtype-$round.jsonl" 2> "$out/dtype-$dtype-$round.err"
    echo "dtype $dtype round $round exit $?"
  done
done
python3 bench/ab_table.py "$out"  # (the call ran an inline copy of this table; same figures)
