#!/usr/bin/env bash
# On the device (fifteenth session, final tree): the shipped sparse configs re-tuned with
# pdl_combine open (0 and 1: the fused merge against mla_combine; split counts re-chosen,
# oracle-checked), written over kgen/tuned/tuning.json; then the whole GPU suite on that database.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/retune.sh 150 /tmp/cc --family sparse --open pdl_combine=0,1
cp /tmp/cc/retuned.json /tmp/cc/retune.log "$out/"
bash bench/gpu_suite.sh 260 "$out/gpu-tests.log"
md5sum kgen/tuned/tuning.json templates/mla_sparse/attention.cuh templates/mla/combine_kernel.cuh
