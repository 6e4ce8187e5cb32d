#!/usr/bin/env bash
# On the device machine: the GPU test suite, its log under $OUT (or ./gpu-out).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
PYTHONPATH=. python3 bench/diagnose.py 2>&1 | tee "$out/diagnose.txt"
PYTHONPATH=. PYTHONUNBUFFERED=1 timeout "${1:-500}" python3 -m pytest -m gpu -q -n 8 -p no:cacheprovider \
  --maxfail=30 -rfE "${@:2}" 2>&1 | tee "$out/gpu-tests.log" | tail -60
