#!/usr/bin/env bash
# On the device (thirty-eighth session): host cost per call after PackedLaunch moved to
# cuLaunchKernelEx with a config made once (bench/host_overhead.py), then the GPU suite on this tree.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
find kgen templates tests -type f \( -name '*.py' -o -name '*.cuh' -o -name '*.jinja' -o -name '*.json' \) \
  | sort | xargs md5sum > "$out/tree.md5"
PYTHONPATH=. timeout 150 python3 bench/host_overhead.py > "$out/host_overhead.txt" 2>&1
echo "host_overhead exit $?"; cat "$out/host_overhead.txt"
bash bench/gpu_suite.sh 340 "$out/gpu-tests.log"
