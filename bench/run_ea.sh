#!/usr/bin/env bash
# On the device (twentieth session): run's leaner fast path (host cost, runner GPU tests); the two
# dense near-misses (dsv3-tp8-decode-batch, page1-decode) re-timed beside split/stage variants.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 120 python3 -m pytest -q tests/test_runner_gpu.py tests/test_launch_gpu.py > "$out/runner-tests.log" 2>&1; tail -2 "$out/runner-tests.log"
for i in 1 2; do python3 bench/host_overhead.py; done > "$out/host_overhead.txt" 2>&1
grep -E "torch.add|floor|PackedLaunch|runner.run, out|attention" "$out/host_overhead.txt"
D=dsv3-tp8-decode-batch; P=page1-decode
timeout 360 python3 bench/time_shipped.py --reps 20 $D $D:kv_splits=3 $D:kv_splits=4 $D:smem_stages=5 \
  $D:kv_splits=4,smem_stages=3 $D:min_blocks=0 $D $P $P:kv_splits=5 $P:kv_splits=6 $P:kv_splits=8 \
  $P:smem_stages=5 $P:smem_stages=3 $P:min_blocks=1 $P > "$out/near.jsonl" 2>&1
cat "$out/near.jsonl" | cut -c1-160
