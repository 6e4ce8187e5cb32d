#!/usr/bin/env bash
# Tenth session: run_an's kernel changes landed, so every 16-bit shipped entry (13 dense, 10
# sparse) re-tuned (bench/retune_shipped.py: configs pinned, split counts re-chosen) and written
# over the shipped database ($OUT/tuning.json: copy it to kgen/tuned/); then the whole GPU suite
# with it. Logs in $OUT/run-ao.tar.gz; a summary on stdout.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/ao"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/retune.sh 340 "$out/ao"
cp kgen/tuned/tuning.json "$out/tuning.json"
timeout 210 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs > "$out/ao/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/ao/gpu-tests.log")"; grep -E "^(FAILED|ERROR)" "$out/ao/gpu-tests.log" | head
tar czf "$out/run-ao.tar.gz" -C "$out" ao && rm -rf "$out/ao"
