#!/usr/bin/env bash
# Eleventh session, second device call: the whole GPU suite on main's HEAD (run_as.sh gave it 200 s,
# too few: 119 of 122 had passed); then, since the retunes since the fifth session's full sweep
# only re-chose split counts for code that has changed a lot (swizzle, cp.async zeros, max vote),
# a fresh sweep of the 8-warp and 4-warp mma space on the H >= 64 and verify cases.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/at"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/gpu_suite.sh 280 "$out/gpu-tests.log"
common="--compute mma --num-warps 4 8 --mma-tiles 3x16 4x16 2x32 --min-blocks 0 1 --qk-ahead 0 1
  --split-softmax 0 1 --swap-rows 0 --reps 10"
timeout 160 python3 bench/sweep.py --out "$out/at/wide" --db "$out/at/wide.json" $common --col-groups 4 \
  --heads-per-block 16 32 --case kimi-tp1-decode --case kimi-tp1-decode-64k --case kimi-tp1-batch \
  --case dsv3-tp1-batch --seconds 140 > "$out/at/sweep-wide.log" 2>&1
echo "wide sweep exit $?"
timeout 140 python3 bench/sweep.py --out "$out/at/verify" --db "$out/at/verify.json" $common --col-groups 4 8 \
  --heads-per-block 1 2 4 --case kimi-tp8-verify-tree --case kimi-tp8-verify-batch --case kimi-tp1-verify-tree \
  --seconds 120 > "$out/at/sweep-verify.log" 2>&1
echo "verify sweep exit $?"
grep -hE "^\S+ +(best|default) " "$out"/at/sweep-*.log
rm -f "$out"/at/*/*.png; tar czf "$out/run-at.tar.gz" -C "$out" at && rm -rf "$out/at"
