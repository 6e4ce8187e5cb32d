#!/usr/bin/env bash
# On the device (twenty-fourth session, call 3): the draft tiles first, in their own loop (branch
# drafts-noinline, "."), against main (mainref/), alternating, on the three 16-bit tree entries;
# tree vs causal; the three tree entries re-timed at their configs (splits re-chosen); the
# mask-path GPU tests; memcheck and racecheck on the 16-token tree sample variants.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/ab.sh ab 2 20 . mainref -- kimi-tp8-verify-tree kimi-tp8-verify-batch kimi-tp1-verify-tree
timeout 60 python3 bench/retune_shipped.py --reps 10 --out /tmp/rt --db "$out/retuned.json" \
  kimi-tp8-verify-batch kimi-tp1-verify-tree kimi-tp8-verify-tree > "$out/retune.log" 2>&1
echo "retune exit $?"; grep -o '"case": "[a-z0-9-]*"\|"us": [0-9.]*' "$out/retune.log" | paste - - | head
timeout 50 python3 bench/tree_vs_causal.py kimi-tp8-verify-tree kimi-tp8-verify-batch kimi-tp1-verify-tree > "$out/tree_vs_causal.txt" 2>&1; tail -5 "$out/tree_vs_causal.txt"
bash bench/gpu_suite.sh 170 "$out/gpu-tests.log" tests/test_mla_gpu.py tests/test_runner_gpu.py tests/test_mla_inputs_gpu.py
for tool in memcheck racecheck; do
  timeout 45 compute-sanitizer --tool $tool --report-api-errors no python3 tests/sanitize_sample.py t16_p64_tree \
    > "$out/$tool.log" 2>&1; echo "$tool exit $?: $(grep -c '^ok' "$out/$tool.log") ok; $(tail -1 "$out/$tool.log")"
done
