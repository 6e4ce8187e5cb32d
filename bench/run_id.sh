#!/usr/bin/env bash
# On the device (twenty-fourth session, call 4): the prefix loop's tile positions without the
# draft-first select (".") against the committed draft-first tree (v1/) and main (mainref/),
# alternating, on the three tree entries; the three re-timed on "."; the whole GPU suite on ".";
# synccheck on the tree sample variants.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/ab.sh ab 2 20 . v1 mainref -- kimi-tp8-verify-tree kimi-tp8-verify-batch kimi-tp1-verify-tree
timeout 60 python3 bench/retune_shipped.py --reps 10 --out /tmp/rt --db "$out/retuned.json" \
  kimi-tp8-verify-batch kimi-tp1-verify-tree kimi-tp8-verify-tree > "$out/retune.log" 2>&1
echo "retune exit $?"; grep -o '"case": "[a-z0-9-]*"\|"us": [0-9.]*' "$out/retune.log" | paste - - | head
md5sum kgen/tuned/tuning.json templates/*/*.cuh templates/*/*/*.cuh templates/*/*.jinja > "$out/tree.md5"
bash bench/gpu_suite.sh 300 "$out/gpu-tests.log"
timeout 40 compute-sanitizer --tool synccheck --report-api-errors no python3 tests/sanitize_sample.py t16_p64_tree \
  > "$out/synccheck.log" 2>&1; echo "synccheck exit $?: $(grep -c '^ok' "$out/synccheck.log") ok; $(tail -1 "$out/synccheck.log")"
