#!/usr/bin/env bash
# On the device (twenty-third session): is the verify cases' remaining cost the mask or the rows?
# Each 16-bit tree case under its tree mask, a causal mask and no mask (same config); the two
# batch kernels of the same rows and KV profiled (ncu); the host cost per call.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 200 python3 bench/tree_vs_causal.py kimi-tp8-verify-batch kimi-tp8-verify-tree kimi-tp1-verify-tree \
  > "$out/masks.jsonl" 2> "$out/masks.err"; echo "masks exit $?"
timeout 60 python3 bench/time_shipped.py kimi-tp1-batch kimi-tp8-verify-batch > "$out/shipped.jsonl" 2>&1
timeout 200 bash bench/stalls.sh kimi-tp1-batch kimi-tp8-verify-batch > "$out/stalls.log" 2>&1; echo "stalls exit $?"
timeout 90 python3 bench/host_overhead.py > "$out/host_overhead.txt" 2>&1
cat "$out/masks.jsonl" "$out/shipped.jsonl"; tail -4 "$out/masks.err"
cat "$out/stalls-details.txt" | head -60
cat "$out/host_overhead.txt"
