#!/usr/bin/env bash
# On the device (thirteenth session): the H <= 16 decode cases at three blocks per SM (bench/h16_cases.txt),
# each build's resources, two rounds.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
mapfile -t cases < <(grep -v '^#' bench/h16_cases.txt)
PYTHONPATH=. python3 bench/sass_dump.py "$out/sass" "${cases[@]}" 2>&1 | grep -v Warn | tee "$out/resources.txt" | cut -c1-150
OUT="$out" bash bench/time_cases.sh bench/h16_cases.txt 2
cd "$out" && tar czf all.tar.gz times && rm -rf times sass
