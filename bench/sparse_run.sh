#!/usr/bin/env bash
# On the device machine (H200), the sparse family's (issue 8) first run, in one call of ~9 min:
#   (a) its GPU tests and (b) compute-sanitizer memcheck, racecheck and synccheck on
#       tests/sanitize_sparse_sample.py, side by side (both only check results);
#   (c) then, alone on the GPU, the sweep of kgen/tune/grid.json's 10 sparse cases: results in
#       $OUT/sparse-sweep, winners in the tuning database $OUT/sparse-tuning.json; the time left
#       is shared out among the cases (kgen sweep --seconds), so big cases may leave variants
#       untimed (the table says how many);
# and last a summary: each step's exit code and bench/sparse_table.py's table against issue 8's
# floor. Logs under $OUT.
#   bash bench/sparse_run.sh [total seconds, default 540]
set -uo pipefail
start=$(date +%s); total=${1:-540}
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=${KGEN_CACHE_DIR:-/tmp/kgen-cache}
elapsed() { echo $(( $(date +%s) - start )); }

# (a) || (b). -v: if the timeout cuts the tests short, the log still says which items passed;
# the device hypothesis profile reports a failing example without shrinking it.
KGEN_HYPOTHESIS_PROFILE=device timeout 200 python3 -m pytest -m gpu -v -n 8 -p no:cacheprovider -rfEs \
  tests/test_sparse_gpu.py tests/test_sparse_tune_gpu.py > "$out/sparse-gpu-tests.log" 2>&1 &
tests_pid=$!
bash bench/sanitize.sh 75 tests/sanitize_sparse_sample.py sanitize-sparse \
  > "$out/sanitize-sparse.txt" 2>&1
wait "$tests_pid"; tests_rc=$?
checks_s=$(elapsed)

# (c): 16-byte gathers only (8 compiles to the same registers and moves half as much per
# instruction); the grid's fp8 cache refuses 3x32 and 2x64 on sm_120 anyway.
sweep_s=$(( total - $(elapsed) - 25 )); [ "$sweep_s" -lt 60 ] && sweep_s=60
timeout "$sweep_s" python3 bench/sweep.py --family sparse --out "$out/sparse-sweep" \
  --db "$out/sparse-tuning.json" --num-warps 4 8 --col-groups 2 4 8 \
  --sparse-tiles 2x16 3x16 4x16 2x32 --register-tiles 16 32 --gather-bytes 16 \
  --min-blocks 0 1 --reps 20 --seconds $(( sweep_s - 15 )) > "$out/sparse-sweep.log" 2>&1
sweep_rc=$?
timeout 20 python3 bench/sparse_table.py "$out/sparse-sweep" > "$out/sparse-table.txt" 2>&1

echo "== (a) sparse GPU tests: exit $tests_rc; $(grep -E '[0-9]+ (passed|failed|errors?|skipped)' "$out/sparse-gpu-tests.log" | tail -1)"
grep -E '^(FAILED|ERROR)' "$out/sparse-gpu-tests.log" | head -12
[ "$tests_rc" = 124 ] && { echo "(cut at 200 s; failed so far:)"
  grep -E '\[gw[0-9]+\].*(FAILED|ERROR)' "$out/sparse-gpu-tests.log" | head -12; }
echo "== (b) compute-sanitizer ($checks_s s for (a) and (b)):"
cat "$out/sanitize-sparse.txt"
echo "== (c) sweep: exit $sweep_rc (124: cut at ${sweep_s} s); $(grep -c 'left untimed' "$out/sparse-sweep.log") cases cut short"
grep -E 'WRONG|Traceback|Error' "$out/sparse-sweep.log" | grep -v 'it/s\]\|s/it\]' | head -8
cat "$out/sparse-table.txt"
echo "total $(elapsed) s"
