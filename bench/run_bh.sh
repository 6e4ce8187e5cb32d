#!/usr/bin/env bash
# On the device (thirteenth session): four 4-warp blocks per SM (128 registers, two stages) with
# fewer of q's k steps in registers (the rest from shared memory). q4/ and q5/ = main with the
# layout's tight-register rule keeping 4 or 5 k steps of q in registers (untracked copies); main
# keeps 8 there (52-188 B of spill). Resources of each build, then an A/B on bench/mb4_cases.txt.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
mapfile -t cases < <(grep -v '^#' bench/mb4_cases.txt)
for t in . q4 q5; do
  (cd "$t" && PYTHONPATH=. python3 bench/sass_dump.py "$out/sass-$t" "${cases[@]}" 2>&1 | grep -v Warn | grep "min_blocks=4" | sed "s/^/$t /")
done
bash bench/ab.sh mb4 2 10 . q4 q5 -- "${cases[@]}"
cd "$out" && tar czf all.tar.gz mb4 && rm -rf sass-* mb4
