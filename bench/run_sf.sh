#!/usr/bin/env bash
# On the device (thirty-third session, branch item-rows2, after run_se.sh's database is in
# kgen/tuned/tuning.json): compute-sanitizer memcheck, racecheck and synccheck on the dense and
# sparse samples.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/sanitize.sh 25 > "$out/sanitize.txt" 2>&1; tail -4 "$out/sanitize.txt"; echo "at ${SECONDS}s"
bash bench/sanitize.sh 15 tests/sanitize_sparse_sample.py sanitize-sparse > "$out/sanitize-sparse.txt" 2>&1
tail -4 "$out/sanitize-sparse.txt"; echo "at ${SECONDS}s"
