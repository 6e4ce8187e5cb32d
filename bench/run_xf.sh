#!/usr/bin/env bash
# On the device (thirty-eighth session): the GPU suite on the submitted tree (the launch change,
# the new stream-following test), with the tree's md5 sums.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
find kgen templates tests -type f \( -name '*.py' -o -name '*.cuh' -o -name '*.jinja' -o -name '*.json' \) \
  | sort | xargs md5sum > "$out/tree.md5"
bash bench/gpu_suite.sh 360 "$out/gpu-tests.log"
exit 0
