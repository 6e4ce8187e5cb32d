#!/usr/bin/env bash
# On the device (thirty-first session, call 1): are the row path's batch and B = 1 kernels waiting
# on the latency of their KV copies? Knock-ins ask L2 for the tile 1 / 2 / 4 tiles past the one being
# copied (bpf*, sbpf* in specialised blocks, wbpf2 with swapped rows: one cp.async.bulk.prefetch.L2 a block and tile; lpf2: its lines dealt over the
# threads with prefetch.global.L2). Outputs checked against the unedited kernel. Two rounds.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=""
for round in 1 2; do
  for c in kimi-tp1-batch dsv3-tp1-batch kimi-tp1-decode-64k kimi-tp8-verify-batch \
      kimi-tp8-verify-tree kimi-tp1-verify-tree dsv3-tp8-decode-long; do
    runs="$runs $c $c@bpf1 $c@bpf2 $c@bpf4 $c@lpf2"
  done
  for c in kimi-tp1-decode page1-decode dsv3-tp8-decode-batch kimi-tp8-decode-long; do
    runs="$runs $c $c@sbpf2 $c@sbpf4"
  done
  runs="$runs kimi-tp8-decode-batch kimi-tp8-decode-batch@wbpf2"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv > "$out/gpu.txt" 2>&1
timeout 500 python3 bench/knockout.py --check --reps 20 $runs > "$out/l2ahead.txt" 2> "$out/l2ahead.err"
echo "exit $?"; tail -2 "$out/l2ahead.err" | cut -c1-300; cut -c1-150 "$out/l2ahead.txt"
