#!/usr/bin/env bash
# On the device (twenty-fifth session, calls 8 and 9: v1, then v2): the sparse family's short splits asking L2 for
# their rows at the start (branch sparse-l2-warm, ".") against main (mainref/), alternating:
# the three B = 1 cases (splits of 32-128 rows) and three batch cases (longer splits: unchanged
# code path, a control).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/ab.sh ab 3 30 . mainref -- dsv32-sparse-h128-b1 dsv32-sparse-h64-b1 dsv32-sparse-h16-b1 \
  dsv32-sparse-h16-b32 dsv32-sparse-h64-b32 dsv32-sparse-h16-verify
