#!/usr/bin/env bash
# On the device (thirteenth session, branch fast-tail; mn/ = an untracked copy of main): the
# resources of every case's shipped config in both trees, an A/B on bench/tail_cases.txt, the
# per-block trace of five split-heavy cases, then the whole GPU suite on the branch.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
mapfile -t cases < <(grep -v '^#' bench/tail_cases.txt)
for t in . mn; do
  (cd "$t" && PYTHONPATH=. python3 bench/sass_dump.py "$out/sass-$t" "${cases[@]}" 2>&1 | grep -v Warn > "$out/resources-$(basename "$(cd "$t" && pwd)").txt")
done
paste -d'|' "$out"/resources-*.txt | awk -F'|' '$1 != $2' | cut -c1-220
bash bench/ab.sh tail 2 10 . mn -- "${cases[@]}"
PYTHONPATH=. timeout 120 python3 bench/trace.py kimi-tp8-decode-long kimi-tp1-decode dsv3-tp8-decode-batch 2>&1 | grep -v Warn > "$out/trace.txt"
tail -8 "$out/trace.txt"
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
cd "$out" && tar czf all.tar.gz tail && rm -rf tail sass-*
