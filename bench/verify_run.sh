#!/usr/bin/env bash
# On the device machine, the final checks of a submission in one call: the GPU test suite,
# compute-sanitizer (memcheck, racecheck, synccheck) on tests/sanitize_sample.py, and Nsight
# Compute on bench/profile.py's launches. Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/device_run.sh "${1:-260}" 0
bash bench/sanitize.sh "${2:-70}"
python3 bench/profile.py --compile >> "$out/precompile.log" 2>&1
timeout "${3:-80}" ncu --clock-control none -k regex:mla_attention --section SpeedOfLight \
  --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy \
  --csv --page details python3 bench/profile.py > "$out/ncu.csv" 2> "$out/ncu.err"
echo "ncu exit $?: $(grep -c '^"' "$out/ncu.csv") rows"
