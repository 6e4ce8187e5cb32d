#!/usr/bin/env bash
# Seventh session, branch swap-rows: the swapped-rows path (rows on the n8 side of both MMAs) on
# the GPU: its hypothesis test and the suites that draw it, then the two H = 8 decode cases timed
# with swap_rows against their shipped configs (time_shipped overrides).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
KGEN_HYPOTHESIS_PROFILE=device timeout 120 python3 -m pytest -q -n 14 -p no:cacheprovider -rfEs \
  "tests/test_mla_gpu.py::test_swapped_rows_sample_matches_reference" > "$out/swap-tests.log" 2>&1
echo "tests exit $?: $(tail -1 "$out/swap-tests.log")"
grep -E "^(FAILED|ERROR)|Falsifying|swap_rows=1" "$out/swap-tests.log" | head -20
b=kimi-tp8-decode-batch; l=kimi-tp8-decode-long
timeout 100 python3 bench/time_shipped.py $b $l \
  "$b:swap_rows=1,split_softmax=0" "$b:swap_rows=1,split_softmax=0,kv_splits=16" \
  "$b:swap_rows=1,split_softmax=0,qk_ahead=0" "$b:swap_rows=1,split_softmax=0,qk_ahead=0,smem_stages=2,kv_splits=16" \
  "$l:swap_rows=1,split_softmax=0" "$l:swap_rows=1,split_softmax=0,qk_ahead=1,min_blocks=0" \
  "$l:swap_rows=1,split_softmax=0,smem_stages=2" > "$out/swap-timing.jsonl" 2> "$out/swap-timing.err"
echo "timing exit $?"; cat "$out/swap-timing.jsonl"; tail -3 "$out/swap-timing.err"
