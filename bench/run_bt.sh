#!/usr/bin/env bash
# On the device (fourteenth session): the combine in a kernel of its own, launched with PDL,
# against the fused combine (bench/pdl_combine.py).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
PYTHONPATH=. timeout 230 python3 bench/pdl_combine.py kimi-tp8-decode-long kimi-tp1-decode \
    kimi-tp8-verify-tree dsv3-tp8-decode-batch kimi-tp1-decode-64k kimi-tp1-batch \
    > "$out/pdl.txt" 2>&1
cat "$out/pdl.txt"
