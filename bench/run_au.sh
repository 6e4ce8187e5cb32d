#!/usr/bin/env bash
# Eleventh session, third device call: the re-swept entries timed again against the old ones
# (olddb/: main before the database change; bench/ab.sh times each tree's shipped configs); a fresh
# sweep of the H <= 16 decode cases (their configs, too, were last swept in the fifth session);
# the whole GPU suite with the new database.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/au"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
changed="kimi-tp1-decode kimi-tp1-decode-64k kimi-tp1-batch dsv3-tp1-batch kimi-tp8-verify-batch kimi-tp1-verify-tree"
OUT="$out" bash bench/ab.sh au-ab 1 10 . olddb -- $changed | tee "$out/ab.txt"
tar czf "$out/au-ab.tar.gz" -C "$out" au-ab && rm -rf "$out/au-ab"
timeout 190 python3 bench/sweep.py --out "$out/au/narrow" --db "$out/au/narrow.json" --compute mma \
  --num-warps 4 8 --col-groups 4 --heads-per-block 8 16 --mma-tiles 3x16 4x16 5x16 2x32 --min-blocks 0 1 \
  --qk-ahead 0 1 --split-softmax 0 1 --swap-rows 0 1 --reps 10 --seconds 170 --case kimi-tp8-decode-long \
  --case kimi-tp8-decode-batch --case dsv3-tp8-decode-batch --case dsv3-tp8-decode-long \
  --case dsv3-tp8-decode-wide --case page1-decode > "$out/au/sweep-narrow.log" 2>&1
echo "narrow sweep exit $?"; grep -hE "^\S+ +(best|default) " "$out"/au/sweep-*.log
rm -f "$out"/au/*/*.png; tar czf "$out/run-au.tar.gz" -C "$out" au && rm -rf "$out/au"
bash bench/gpu_suite.sh 270 "$out/gpu-tests.log"
