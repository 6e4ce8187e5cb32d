#!/usr/bin/env bash
# Tenth session: an A/B/C on every shipped 16-bit case of both families. deadfold/ = main + the
# MASK_NONE row path without the never-taken fold; igonly/ = that + cp.async's ignore-src
# predicate instead of a src-size operand (dense tile copy, sparse gather); the tree = that + the
# softmax max's shuffles skipped when a warp vote says no row's max can move. Then the dense and
# sparse GPU tests on the tree. Logs in $OUT/run-an.tar.gz; a summary on stdout.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/an"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
dense="kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-wide
kimi-tp1-decode kimi-tp1-decode-64k kimi-tp1-batch dsv3-tp1-batch kimi-tp8-verify-tree kimi-tp8-verify-batch
kimi-tp1-verify-tree page1-decode"
sparse="dsv32-sparse-h16-b1 dsv32-sparse-h16-b32 dsv32-sparse-h16-b128 dsv32-sparse-h64-b1 dsv32-sparse-h64-b32
dsv32-sparse-h64-b128 dsv32-sparse-h128-b1 dsv32-sparse-h128-b32 dsv32-sparse-h128-b128 dsv32-sparse-h16-verify"
OUT="$out/an" bash bench/ab.sh an 2 20 deadfold igonly . -- $dense $sparse
timeout 170 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs tests/test_mla_gpu.py tests/test_sparse_gpu.py \
  > "$out/an/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/an/gpu-tests.log")"; grep -E "^(FAILED|ERROR)" "$out/an/gpu-tests.log" | head
tar czf "$out/run-an.tar.gz" -C "$out" an && rm -rf "$out/an"
