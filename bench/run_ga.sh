#!/usr/bin/env bash
# On the device (twenty-second session): L2 eviction priority on the KV tile copies (a knock-in
# edit of the rendered source, bench/knockout.py evict1st / evictlast: results unchanged, not
# checked there), base and variant interleaved; then the whole GPU suite on this tree (the shared
# slices moved into mla/mma/slices.cuh).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
md5sum kgen/tuned/tuning.json templates/mla_sparse/*.cuh templates/mla/mma/*.cuh templates/common/*.cuh > "$out/tree.md5"
R=""
for c in page1-decode kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-wide \
         dsv3-tp8-decode-long kimi-tp8-decode-long; do
  R="$R $c@base $c@evict1st $c@base $c@evict1st"
done
for c in kimi-tp1-decode kimi-tp1-batch kimi-tp8-verify-batch; do
  R="$R $c@base $c@evict1st $c@evictlast $c@base $c@evictlast"
done
timeout 200 python3 bench/knockout.py --reps 20 $R > "$out/evict.txt" 2> "$out/evict.err"
echo "knockout exit $?"; cat "$out/evict.txt"
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
