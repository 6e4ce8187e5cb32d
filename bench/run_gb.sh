#!/usr/bin/env bash
# On the device (twenty-second session): the L2 eviction priority A/B under a dirty and a clean
# L2 flush (bench/evict_ab.py); compute-sanitizer on the split-softmax variants of both samples
# (the shared slices moved into mla/mma/slices.cuh).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 200 python3 bench/evict_ab.py --reps 20 page1-decode kimi-tp8-decode-batch \
  dsv3-tp8-decode-batch dsv3-tp8-decode-long kimi-tp8-decode-long > "$out/evict_ab.txt" 2> "$out/evict_ab.err"
echo "evict_ab exit $?"; cat "$out/evict_ab.txt"; tail -3 "$out/evict_ab.err"
bash bench/sanitize.sh 60 tests/sanitize_sample.py dense "_ss"
bash bench/sanitize.sh 60 tests/sanitize_sparse_sample.py sparse "_ss"
