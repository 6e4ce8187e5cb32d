#!/usr/bin/env bash
# On the device (twenty-third session, the last 4 minutes): the in-kernel bool mask again, rows
# read 8 bytes at a time (168 registers on NVRTC 13.0 here, where run_he's byte loop took 198).
# The four tree entries re-timed, shipped configs pinned (splits re-chosen), merged here; the GPU
# tests of the mask paths; bool against packed; memcheck on the 16-token tree variants.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 70 python3 bench/retune_shipped.py --reps 10 --out /tmp/rt --db "$out/retuned.json" \
  kimi-tp8-verify-batch kimi-tp1-verify-tree kimi-tp8-verify-tree seed-fp32-verify > "$out/retune.log" 2>&1
echo "retune exit $?"; grep -o '"case": "[a-z0-9-]*"\|"us": [0-9.]*' "$out/retune.log" | paste - -
python3 bench/merge_db.py --replace kgen/tuned/tuning.json kgen/tuned/tuning.json "$out/retuned.json"
md5sum kgen/tuned/tuning.json templates/*/*.cuh templates/*/*/*.cuh templates/*/*.jinja kgen/mla/runner.py > "$out/tree.md5"
bash bench/gpu_suite.sh 90 "$out/gpu-tests.log" tests/test_runner_gpu.py tests/test_mla_inputs_gpu.py \
  tests/test_tiled_gpu.py tests/test_mla_gpu.py::test_masked_out_kv_positions_change_nothing \
  tests/test_mla_gpu.py::test_nonfinite_draft_kv_reaches_only_the_rows_that_see_it
timeout 20 python3 bench/mask_pack_cost.py --reps 20 > "$out/mask_pack.jsonl" 2>&1; cat "$out/mask_pack.jsonl"
timeout 25 compute-sanitizer --tool memcheck --report-api-errors no python3 tests/sanitize_sample.py t16_p64_tree \
  > "$out/memcheck.log" 2>&1; echo "memcheck exit $?: $(grep -c '^ok' "$out/memcheck.log") ok; $(tail -1 "$out/memcheck.log")"
