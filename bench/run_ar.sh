#!/usr/bin/env bash
# Tenth session: the KV tile's XOR swizzle (rows of whole 128-byte groups; ncu had found 2.6x the
# ideal shared wavefronts on every LDGSTS of the padded rows). An A/B against prev/ (main before
# it) on the 13 dense cases; the dense entries re-tuned on it ($OUT/tuning.json); the GPU suite
# but the sparse files (the sparse templates do not change); compute-sanitizer on the dense sample.
set -uo pipefail
out=${OUT:-gpu-out}
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
dense="kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-wide
kimi-tp1-decode kimi-tp1-decode-64k kimi-tp1-batch dsv3-tp1-batch kimi-tp8-verify-tree kimi-tp8-verify-batch
kimi-tp1-verify-tree page1-decode"
OUT="$out" bash bench/ab.sh ar 1 10 prev . -- $dense | tee "$out/ab.txt"
tar czf "$out/ar-ab.tar.gz" -C "$out" ar && rm -rf "$out/ar"
bash bench/retune.sh 200 /tmp/ar --family dense; cp /tmp/ar/retune.log "$out/retune.log"
cp kgen/tuned/tuning.json "$out/tuning.json"
bash bench/gpu_suite.sh 170 "$out/gpu-tests.log" --ignore=tests/test_sparse_gpu.py \
  --ignore=tests/test_sparse_tune_gpu.py
mkdir -p /tmp/san; OUT=/tmp/san timeout 120 bash bench/sanitize.sh 30 > "$out/sanitize.txt" 2>&1; tail -3 "$out/sanitize.txt"
