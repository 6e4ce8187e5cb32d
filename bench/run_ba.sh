#!/usr/bin/env bash
# Prepared in the eleventh session for the next one's first device call. The twelfth ran it in two
# calls (steps 1, then 2-3; bench/RESULTS.md) with ir/ qc/ bk/ made from main + each branch's
# template diff, the branches being behind main's tuning database. Expects
# untracked copies of four branches beside the tree, made here with
#   for p in item-rows:ir qk-chains:qc both-kernels:bk default-refit:dr; do
#     mkdir ${p#*:} && git archive ${p%:*} | tar -x -C ${p#*:} && rm -rf ${p#*:}/bench/results; done
# 1. The kernel branches against main (.) on the shipped configs of the 13 dense cases, 2 rounds.
# 2. The heuristic default of default-refit (dr/) against main's, 1 round (time_shipped --default).
# 3. The whole GPU suite on dr/ (its defaults are what config='auto' runs off the tuned grid).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"; out=$(cd "$out" && pwd)  # absolute: step 3 runs in dr/
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
OUT="$out" bash bench/ab.sh ba 2 10 . ir qc bk -- | tee "$out/ab.txt"
OUT="$out" bash bench/ab.sh ba-default 1 10 . dr -- --default | tee "$out/ab-default.txt"
tar czf "$out/ba-ab.tar.gz" -C "$out" ba ba-default && rm -rf "$out/ba" "$out/ba-default"
(cd dr && bash bench/gpu_suite.sh 280 "$out/gpu-tests-dr.log")
