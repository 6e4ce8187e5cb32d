#!/usr/bin/env bash
# On the device (twenty-third session): the causal draft bits as data (kgen::opaque): tree against
# causal again; compute-sanitizer on the sample's causal variants; the whole GPU suite.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
md5sum kgen/tuned/tuning.json templates/*/*.cuh templates/*/*/*.cuh templates/*/*.jinja > "$out/tree.md5"
timeout 90 python3 bench/tree_vs_causal.py kimi-tp8-verify-batch kimi-tp8-verify-tree kimi-tp1-verify-tree \
  > "$out/tree_vs_causal.jsonl" 2> "$out/tree_vs_causal.err"; cat "$out/tree_vs_causal.jsonl"
bash bench/sanitize.sh 45 tests/sanitize_sample.py causal causal
bash bench/gpu_suite.sh 290 "$out/gpu-tests.log"
