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
bash bench/gpu_suite.sh 210 "$out/ao/gpu-tests.log"
tar czf "$out/run-ao.tar.gz" -C "$out" ao && rm -rf "$out/ao"
