#!/usr/bin/env bash
# On the device (fifteenth session, final tree): the shipped configs of the cases where the PDL
# merge won the A/B (bench/run_bz.sh, run_ca.sh) re-tuned with pdl_combine open (0 and 1; split
# counts re-chosen, oracle-checked), written over kgen/tuned/tuning.json; then the whole GPU
# suite on that database and the host cost.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/retune.sh 280 /tmp/cb --open pdl_combine=0,1 kimi-tp8-decode-long kimi-tp1-decode \
  dsv3-tp8-decode-batch kimi-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-wide \
  page1-decode dsv3-tp1-batch
cp /tmp/cb/retuned.json /tmp/cb/retune.log "$out/"
tar czf "$out/retune.tar.gz" -C /tmp/cb retune
bash bench/gpu_suite.sh 250 "$out/gpu-tests.log"
PYTHONPATH=. timeout 50 python3 bench/host_overhead.py > "$out/host_overhead.txt" 2>&1; tail -12 "$out/host_overhead.txt"
md5sum kgen/tuned/tuning.json templates/mla/mma/kernel.cuh templates/mla/combine_kernel.cuh
