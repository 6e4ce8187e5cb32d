#!/usr/bin/env bash
# On the device (sixteenth session, final tree): the three tree entries whose sm_90 SASS moved by
# one operand swap (bench/restamp.py) re-timed with their configs pinned (split counts
# re-chosen), written over kgen/tuned/tuning.json; then the whole GPU suite on that database.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/retune.sh 170 /tmp/ci kimi-tp8-verify-tree kimi-tp8-verify-batch kimi-tp1-verify-tree
cp /tmp/ci/retuned.json /tmp/ci/retune.log "$out/"
bash bench/gpu_suite.sh 300 "$out/gpu-tests.log"
md5sum kgen/tuned/tuning.json templates/mla/mma/*.cuh
