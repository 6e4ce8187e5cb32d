#!/usr/bin/env bash
# On the device (twenty-fifth session, call 4): head groups staggered through their split's tiles
# (branch stagger: STAGGER 2 in ".", 1 in stg1/, 4 in stg4/) against main (mainref/), alternating,
# on the multi-head-group decode cases of kernel.cuh (dsv3-tp8-decode-long: one head group, a control).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/ab.sh ab 2 20 . stg1 stg4 mainref -- dsv3-tp1-batch kimi-tp1-batch kimi-tp1-decode-64k dsv3-tp8-decode-long
