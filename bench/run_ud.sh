#!/usr/bin/env bash
# On the device (thirty-fifth session): the three tree entries whose sm_90 SASS the draft-word
# change moved (run_uc.sh: level with main before it, within 0.3%) re-tuned with their configs
# pinned (the database comes back as $OUT/tuning.json; the other 19 re-stamped here, SASS
# identical), then the GPU suite on this tree and database in what is left of 575 s.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/retune_all.sh 150 kimi-tp1-verify-tree kimi-tp8-verify-batch kimi-tp8-verify-tree
md5sum kgen/tuned/tuning.json templates/mla/mma/*.cuh templates/mla/*.cuh templates/common/*.cuh > "$out/tree.md5"
bash bench/gpu_suite.sh $((575 - SECONDS)) "$out/gpu-tests.log"
