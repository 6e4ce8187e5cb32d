#!/usr/bin/env bash
# On the device (fifteenth session): where the attention kernel lets mla_combine launch (its
# start, its end, or at exit) on the cases the first pdl_combine A/B split on; then the whole
# GPU suite. Ran when the start was the template's placement, as "base", with the edits then
# named late and notrig (bench/knockout.py now has the end as the template's, and early).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=()
for c in kimi-tp8-decode-long kimi-tp8-verify-tree kimi-tp1-verify-tree kimi-tp1-decode:min_blocks=3 \
         kimi-tp1-batch:min_blocks=3 dsv3-tp8-decode-batch; do
  runs+=("$c@base" "$c,pdl_combine=1@base" "$c,pdl_combine=1@late" "$c,pdl_combine=1@notrig")
done
runs=("${runs[@]/kimi-tp8-decode-long,/kimi-tp8-decode-long:}")
runs=("${runs[@]/kimi-tp8-verify-tree,/kimi-tp8-verify-tree:}")
runs=("${runs[@]/kimi-tp1-verify-tree,/kimi-tp1-verify-tree:}")
runs=("${runs[@]/dsv3-tp8-decode-batch,/dsv3-tp8-decode-batch:}")
PYTHONPATH=. timeout 200 python3 bench/knockout.py --reps 10 "${runs[@]}" > "$out/trigger.txt" 2> "$out/trigger.err"
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
cat "$out/trigger.txt"; tail -2 "$out/trigger.err"
