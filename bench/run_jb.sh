#!/usr/bin/env bash
# On the device (twenty-fifth session, call 2): block-table pages read two iterations ahead
# (branch page-ahead, ".") against main (mainref/), alternating, on the memory-bound decode
# cases (page1-decode: a new block-table entry every tile) and three compute-bound ones.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/ab.sh ab 2 20 . mainref -- page1-decode dsv3-tp8-decode-batch dsv3-tp8-decode-wide \
  dsv3-tp8-decode-long kimi-tp8-decode-batch kimi-tp8-decode-long kimi-tp1-decode kimi-tp1-batch \
  dsv3-tp1-batch kimi-tp8-verify-tree
