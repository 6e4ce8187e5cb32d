#!/usr/bin/env bash
# Seventh session, landing the copies' .L2::128B hint: the shipped configs re-tuned with the new
# code (bench/retune_shipped.py: each case's config pinned, its split count re-chosen, its entry
# re-recorded with the new code stamp), then the GPU suite with that database, the dense
# sanitizer sample, and the shipped configs re-timed. Logs and the new database under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cp kgen/tuned/tuning.json "$out/tuning.json"
timeout 300 python3 bench/retune_shipped.py --out "$out/retune" --db "$out/tuning.json" > "$out/retune.jsonl" 2> "$out/retune.err"
echo "retune exit $?"; cat "$out/retune.jsonl"
cp "$out/tuning.json" kgen/tuned/tuning.json
timeout 280 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs > "$out/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/gpu-tests.log")"
grep -E "^(FAILED|ERROR)" "$out/gpu-tests.log" | head -10
bash bench/sanitize.sh 60 > "$out/sanitize.txt" 2>&1; cat "$out/sanitize.txt"
timeout 100 python3 bench/time_shipped.py > "$out/shipped.jsonl" 2> "$out/shipped.err"
cat "$out/shipped.jsonl"
tar czf "$out/retune.tar.gz" -C "$out" retune && rm -rf "$out/retune"
