#!/usr/bin/env bash
# Eleventh session, first device call: an A/B of branches merge-early-loads (mel/) and
# copy-unsigned (cu/) against main (.) on the 13 dense cases; a small sweep of 64-head,
# 16-warp blocks on the H >= 64 cases (they read the cache once per 64 heads, not per 32);
# then the whole GPU suite on main's HEAD (it had not run on exactly that commit).
set -uo pipefail
out=${OUT:-gpu-out}
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
# no cases after "--": bench/time_shipped.py's default, every 16-bit dense case (the 13)
OUT="$out" bash bench/ab.sh as 1 10 . mel cu -- | tee "$out/ab.txt"
tar czf "$out/as-ab.tar.gz" -C "$out" as && rm -rf "$out/as"
timeout 170 python3 bench/sweep.py --out /tmp/as-sweep --compute mma --case kimi-tp1-decode \
  --case kimi-tp1-decode-64k --case kimi-tp1-batch --case dsv3-tp1-batch --heads-per-block 64 \
  --num-warps 16 --col-groups 4 --mma-tiles 3x16 2x16 --min-blocks 0 1 --qk-ahead 0 \
  --split-softmax 0 1 --swap-rows 0 --reps 10 > "$out/sweep-hb64.log" 2>&1
echo "hb64 sweep exit $?"; grep -E "best|us" "$out/sweep-hb64.log" | tail -20
bash bench/gpu_suite.sh 200 "$out/gpu-tests.log"
