#!/usr/bin/env bash
# On the device (thirteenth session, branch warp-dequant): each shipped sparse config against the
# same shape with dequant='warp' at 2 and 3 stages (bench/warp_cases_c.txt), one round.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
OUT="$out/c" bash bench/time_cases.sh bench/warp_cases_c.txt 1
cd "$out" && tar czf all.tar.gz c && rm -rf c
