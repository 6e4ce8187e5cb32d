#!/usr/bin/env bash
# On the device machine (fourth session): the split-softmax kernel. (a) the tensor-core GPU tests
# beside (b) compute-sanitizer on the sample's split-softmax and tree variants (the NaN-draft
# fold changed for both softmax layouts), then (c) the sweep that ships kgen/tuned/tuning.json.
# Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 200 python3 -m pytest -m gpu -q -n 12 -p no:cacheprovider tests/test_mla_gpu.py \
  tests/test_mla_seed_gpu.py -rfEs > "$out/gpu-mla.log" 2>&1 &
tests=$!
bash bench/sanitize.sh 60 "tree|_ss" > "$out/sanitize.txt" 2>&1
wait $tests; echo "gpu tests exit $?: $(tail -1 "$out/gpu-mla.log")"
grep -E "^(FAILED|ERROR)|Falsifying" "$out/gpu-mla.log" | head -10
cat "$out/sanitize.txt"
timeout ${1:-300} python3 bench/sweep.py --out "$out/sweep" --db "$out/tuning.json" --compute mma \
  --num-warps 4 8 16 --col-groups 4 --mma-tiles 3x16 4x16 2x32 --min-blocks 0 1 --qk-ahead 0 1 \
  --split-softmax 0 1 --reps 10 > "$out/sweep.log" 2>&1
echo "sweep exit $?"
grep -E "WRONG|wrong|Traceback" "$out/sweep.log" | head -5
grep -E "^\S+ +(best|default) " "$out/sweep.log"
