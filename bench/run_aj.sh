#!/usr/bin/env bash
# Ninth session: the sparse family's merge with 8 partial loads in flight per thread. Its ten
# shipped entries re-tuned (bench/retune_shipped.py: configs pinned, split counts re-chosen) and
# written over the shipped database ($OUT/tuning.json: copy it to kgen/tuned/); the whole GPU
# suite with that database; compute-sanitizer x3 on the sparse sample.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/aj"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/retune.sh 220 "$out/aj" --family sparse
cp kgen/tuned/tuning.json "$out/tuning.json"
bash bench/gpu_suite.sh 250 "$out/aj/gpu-tests.log"
OUT="$out/aj" timeout 110 bash bench/sanitize.sh 30 tests/sanitize_sparse_sample.py sanitize-sparse > "$out/aj/sanitize.txt" 2>&1
tail -4 "$out/aj/sanitize.txt"
tar czf "$out/run-aj.tar.gz" -C "$out" aj && rm -rf "$out/aj"
