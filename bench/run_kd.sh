#!/usr/bin/env bash
# On the device (twenty-sixth session, call 4), branch ragged-heads (hg-major and ragged head groups): the three entries call 3's
# re-tune did not reach in its time (kimi-tp8-verify-tree, page1-decode, seed-fp32-verify)
# re-tuned into kgen/tuned/tuning.json (copied to $OUT), then the whole GPU suite with it.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 100 python3 bench/retune_shipped.py --out "$out/retune" --db kgen/tuned/tuning.json \
  kimi-tp8-verify-tree page1-decode seed-fp32-verify > "$out/retune.jsonl" 2> "$out/retune.err"
echo "retune exit $?"; rm -f kgen/tuned/tuning.json.lock
cp kgen/tuned/tuning.json "$out/tuning.json"
tar czf "$out/retune.tar.gz" -C "$out" retune && rm -rf "$out/retune"
git ls-files -s templates kgen | md5sum > "$out/tree.md5"; md5sum kgen/tuned/tuning.json >> "$out/tree.md5"
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
