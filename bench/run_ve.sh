#!/usr/bin/env bash
# On the device (thirty-sixth session), after ring_slack took the split softmax as a requirement
# (racecheck's scheduling showed the fused-softmax variant's partial scores racing) and the arrive
# its sink form: (1) compute-sanitizer x3 on the ring variants of tests/sanitize_sample.py;
# (2) racecheck on bench/ring_racecheck.py with one arrival a warp (as built) and one a thread:
# whose hazards are racecheck's and whose the kernel's; (3) the GPU suite's ring and three-row
# tests; (4) sm_120's ring defaults against ring_slack 0 at sm_120's occupancy (two shapes).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
md5sum kgen/mla/*.py templates/mla/mma/*.cuh templates/common/*.cuh > "$out/tree.md5"
bash bench/sanitize.sh 90 '_rs[0-9]'
for mode in warp thread; do
  timeout 90 compute-sanitizer --tool racecheck --report-api-errors no python3 bench/ring_racecheck.py $mode \
    > "$out/ring-racecheck-$mode.log" 2>&1
  echo "racecheck $mode exit $?: $(grep -c '^ok' "$out/ring-racecheck-$mode.log") ok; $(tail -1 "$out/ring-racecheck-$mode.log")"
done
bash bench/gpu_suite.sh 120 "$out/gpu-tests.log" tests/test_mla_gpu.py -k "ring or ragged or matches_reference"
runs=()
for shape in kimi-tp1-verify-tree H=128,T=3,B=1,S=16384,mask=tree; do runs+=("$shape" "$shape:ring_slack=0"); done
timeout 90 python3 bench/sm120_like.py --reps 20 "${runs[@]}" > "$out/sm120_rs.jsonl" 2> "$out/sm120_rs.err"
grep "^sm120_like:" "$out/sm120_rs.err" | sed 's/  */ /g'
