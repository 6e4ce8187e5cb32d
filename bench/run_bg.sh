#!/usr/bin/env bash
# On the device (thirteenth session): qk-chains (qc/ = main + its template diff) against main at
# min_blocks 0, 1 (shipped) and 3 on the three entries it changes, with each build's resources.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
mapfile -t cases < <(grep -v '^#' bench/qc_cases.txt)
for t in . qc; do
  (cd "$t" && PYTHONPATH=. python3 bench/sass_dump.py "$out/sass-$t" "${cases[@]}" 2>&1 | grep -v Warn | tail -12)
done
bash bench/ab.sh qcmb 2 10 . qc -- "${cases[@]}"
cd "$out" && tar czf all.tar.gz sass-* qcmb && rm -rf sass-* qcmb
