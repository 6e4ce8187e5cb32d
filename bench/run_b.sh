#!/usr/bin/env bash
# On the device machine (third session, first call): per-block phase traces of the shipped configs
# with the fused combine before (bench/before/combine.cuh, main's) and after this branch's, then
# the tensor-core GPU tests. Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
rm -rf /tmp/before && mkdir /tmp/before && cp -r kgen templates bench /tmp/before/
cp bench/before/combine.cuh /tmp/before/templates/mla/combine.cuh
(cd /tmp/before && PYTHONPATH=. timeout 200 python3 bench/trace.py --compile > "$out/trace-before-compile.log" 2>&1) &
timeout 200 python3 bench/trace.py --compile > "$out/trace-after-compile.log" 2>&1 &
wait
(cd /tmp/before && PYTHONPATH=. timeout 100 python3 bench/trace.py > "$out/trace-before.txt" 2>&1)
timeout 100 python3 bench/trace.py > "$out/trace-after.txt" 2>&1
timeout "${1:-220}" python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider tests/test_mla_gpu.py \
  tests/test_mla_seed_gpu.py -x -rfEs > "$out/gpu-mla.log" 2>&1
echo "mla gpu tests exit $?: $(tail -1 "$out/gpu-mla.log")"
echo "--- before (main's combine)"; cat "$out/trace-before.txt" | tail -15
echo "--- after"; cat "$out/trace-after.txt" | tail -15
