#!/usr/bin/env bash
# Ninth session, last device call: the whole GPU suite on the final tree (new sparse default, one
# Finish for both families), compute-sanitizer x3 on the sparse sample, bench/host_overhead.py
# twice (warm machine). Logs in $OUT/run-ag.tar.gz; a summary on stdout.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/ag"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 330 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs > "$out/ag/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/ag/gpu-tests.log")"; grep -E "^(FAILED|ERROR)" "$out/ag/gpu-tests.log" | head
OUT="$out/ag" bash bench/sanitize.sh 35 tests/sanitize_sparse_sample.py sanitize-sparse > "$out/ag/sanitize.txt" 2>&1
cat "$out/ag/sanitize.txt" | tail -8
for i in 1 2; do timeout 60 python3 bench/host_overhead.py > "$out/ag/host-$i.txt" 2>&1; tail -6 "$out/ag/host-$i.txt"; done
tar czf "$out/run-ag.tar.gz" -C "$out" ag && rm -rf "$out/ag"
