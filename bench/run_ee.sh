#!/usr/bin/env bash
# On the device (twentieth session, final tree): the new sm_120 defaults at sm_120's occupancy
# (bench/sm120_like.py, no overrides: what config='auto' now picks on an sm_120 of 132 SMs);
# 3-stage specialised variants of three decode cases beside their shipped configs (alternating);
# the whole GPU suite.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 150 python3 bench/sm120_like.py --reps 20 dsv3-tp8-decode-batch dsv3-tp8-decode-long \
  dsv3-tp8-decode-wide kimi-tp8-decode-batch kimi-tp8-decode-long page1-decode \
  > "$out/sm120_like.jsonl" 2> "$out/sm120_like.err"
cut -c1-150 "$out/sm120_like.jsonl"
W=dsv3-tp8-decode-wide; L=dsv3-tp8-decode-long; K=kimi-tp8-decode-long
V="$W $W:kv_splits=2,smem_stages=3 $L $L:specialize=1,num_warps=8,smem_stages=3,qk_ahead=0,min_blocks=0,kv_splits=8 $K $K:smem_stages=3,kv_splits=264"
timeout 200 python3 bench/time_shipped.py --reps 30 $V $V > "$out/variants.jsonl" 2>&1
grep '^{' "$out/variants.jsonl" | cut -c1-170
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
md5sum kgen/tuned/tuning.json kgen/mla/heuristic.py kgen/mla/runner.py
