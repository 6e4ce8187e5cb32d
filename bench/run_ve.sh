#!/usr/bin/env bash
# On the device (thirty-sixth session), after ring_slack took the split softmax as a requirement
# (racecheck's scheduling showed the fused-softmax variant's partial scores racing) and the arrive
# its sink form: (1) compute-sanitizer x3 on the ring variants of tests/sanitize_sample.py;
# (2) racecheck on bench/ring_racecheck.py with one arrival a warp (as built) and one a thread:
# whose hazards are racecheck's and whose the kernel's; (3) the GPU suite's ring and ragged tests.
# (The defaults' SASS is the one timed in vb/ and vc/: checked here, cuobjdump.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
md5sum kgen/mla/*.py templates/mla/mma/*.cuh templates/common/*.cuh > "$out/tree.md5"
bash bench/sanitize.sh 70 '_rs[0-9]'
for mode in warp thread; do
  timeout 70 compute-sanitizer --tool racecheck --report-api-errors no python3 bench/ring_racecheck.py $mode \
    > "$out/ring-racecheck-$mode.log" 2>&1
  echo "racecheck $mode exit $?: $(grep -c '^ok' "$out/ring-racecheck-$mode.log") ok; $(tail -1 "$out/ring-racecheck-$mode.log")"
done
bash bench/gpu_suite.sh 120 "$out/gpu-tests.log" tests/test_mla_gpu.py -k "ring or ragged"
