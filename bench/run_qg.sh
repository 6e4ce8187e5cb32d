#!/usr/bin/env bash
# On the device (thirty-first session, branch row-stores, since lost): after a kernel change that
# makes the shipped entries stale, every 16-bit shipped entry re-tuned with its config pinned
# (bench/retune_all.sh, then within 310 s) into kgen/tuned/tuning.json (brought back as
# $OUT/tuning.json), then the GPU suite on that tree and database.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/retune_all.sh 310
bash bench/gpu_suite.sh 255 "$out/gpu-tests.log"
