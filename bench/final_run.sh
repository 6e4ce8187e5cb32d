#!/usr/bin/env bash
# On the device machine, the final checks of a submission in one call: the GPU test suite (with
# plan/run, graphs, the custom op under torch.compile), the host cost per call, and Nsight Compute
# on bench/profile.py's launches. Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
python3 -c "import transformers; print('transformers', transformers.__version__)" 2>&1 | tail -1
timeout "${1:-330}" python3 -m pytest -m gpu -v -n 14 -p no:cacheprovider --maxfail=40 -rfEs \
  -W ignore::pytest.PytestWarning > "$out/gpu-tests.log" 2>&1
echo "tests exit $?"; grep -E "FAILED|ERROR|passed|failed" "$out/gpu-tests.log" | grep -v "^\[gw" | tail -30
timeout 90 python3 bench/host_overhead.py > "$out/host_overhead.txt" 2>&1
echo "host overhead exit $?"; tail -12 "$out/host_overhead.txt"
python3 bench/profile.py --compile > "$out/precompile.log" 2>&1
timeout "${2:-90}" ncu --clock-control none -k regex:mla_attention --section SpeedOfLight \
  --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy \
  --csv --page details python3 bench/profile.py > "$out/ncu.csv" 2> "$out/ncu.err"
echo "ncu exit $?: $(grep -c '^"' "$out/ncu.csv") rows"
