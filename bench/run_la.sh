#!/usr/bin/env bash
# On the device (twenty-seventh session, call 2), branch ragged-heads after call 1 (ke/: 156 of 157
# GPU tests passed; test_single_token_under_any_mask_is_decode found the tree kernel's draft-tile-first
# order rounding a one-row tree differently from decode): one-row causal now renders the decode kernel,
# the test compares the tree within tolerance; the 48-row sm_120 default only where 48 divides H.
# The whole GPU suite and the host cost (no kernel code changed since ke/'s sanitizer runs but the
# one-row causal rendering, which is now the decode kernel the sample already covers).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
git ls-files -s templates kgen tests | md5sum > "$out/tree.md5"
bash bench/gpu_suite.sh 360 "$out/gpu-tests.log"
timeout 60 python3 bench/host_overhead.py > "$out/host_overhead.txt" 2>&1; echo "host exit $?"
tail -8 "$out/host_overhead.txt"
