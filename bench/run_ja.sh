#!/usr/bin/env bash
# On the device (twenty-fifth session, call 1): the whole GPU suite on main as it stands (ad90c3b),
# which the twenty-fourth session could not run after its last kernel.cuh change.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
git ls-files -s templates kgen | md5sum > "$out/tree.md5" 2>/dev/null || find templates kgen -type f -name '*.c*' -o -name '*.py' | sort | xargs md5sum | md5sum > "$out/tree.md5"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
bash bench/gpu_suite.sh 400 "$out/gpu-tests.log"
