#!/usr/bin/env bash
# On the device (twenty-fourth session, call 2): the draft tiles' loop in a __noinline__ function
# of its own (branch drafts-noinline, "."), against main (a copy in mainref/), alternating, on the
# three 16-bit tree entries; the dense GPU tests and memcheck on the branch; host cost parts.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/ab.sh ab 2 20 . mainref -- kimi-tp8-verify-tree kimi-tp8-verify-batch kimi-tp1-verify-tree
bash bench/gpu_suite.sh 200 "$out/gpu-tests.log" tests/test_mla_gpu.py tests/test_mla_seed_gpu.py tests/test_runner_gpu.py
timeout 40 compute-sanitizer --tool memcheck --report-api-errors no python3 tests/sanitize_sample.py t16_p64_tree \
  > "$out/memcheck.log" 2>&1; echo "memcheck exit $?: $(grep -c '^ok' "$out/memcheck.log") ok; $(tail -1 "$out/memcheck.log")"
timeout 60 python3 bench/host_parts.py > "$out/host_parts.txt" 2>&1; cat "$out/host_parts.txt"
