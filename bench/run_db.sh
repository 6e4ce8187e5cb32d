#!/usr/bin/env bash
# On the device (nineteenth session): seed-fp32-verify on the tiled path, A/B of two edits
# (hk_pf: q.K^T's K quads loaded a k4 step ahead; hk_rs: that, and o rescaled only when some row's
# max rose), at the shipped 16 splits and at 33 (two whole waves of 132 blocks), depths 2-4; then
# dsv3-tp1-batch's shipped config at 4 stages (two KV tiles in flight with q.K ahead, not one).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/ab.sh ab2 2 10 . hk_pf hk_rs -- seed-fp32-verify seed-fp32-verify:kv_splits=33 \
  seed-fp32-verify:smem_stages=2,kv_splits=33 seed-fp32-verify:smem_stages=4,kv_splits=33
PYTHONPATH=. timeout 120 python3 bench/time_shipped.py --reps 10 dsv3-tp1-batch dsv3-tp1-batch:smem_stages=4 \
  dsv3-tp1-batch:smem_stages=4,min_blocks=2 > "$out/inflight.jsonl" 2> "$out/inflight.err"
cat "$out/inflight.jsonl"; tail -3 "$out/inflight.err"
