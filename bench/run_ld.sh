#!/usr/bin/env bash
# On the device (twenty-seventh session, call 5): the whole GPU suite on main after the
# ragged-heads merge (kernels and tests as lb/ ran them).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
git ls-files -s templates kgen tests | md5sum > "$out/tree.md5"
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
