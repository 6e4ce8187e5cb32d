#!/usr/bin/env bash
# On the device machine, one call: the GPU test suite, then a sweep of the grid, logs under $OUT.
#   bash bench/device_run.sh [test seconds] [sweep seconds] [sweep options...]
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
python3 bench/diagnose.py > "$out/diagnose.txt" 2>&1  # NVRTC version, library and ptxas report
tests=${1:-300}; sweep=${2:-280}; shift 2 || true
if [ "$tests" -gt 0 ]; then
  timeout "$tests" python3 -m pytest -m gpu -v -n 14 -p no:cacheprovider --maxfail=40 -rfE \
    -W ignore::pytest.PytestWarning > "$out/gpu-tests.log" 2>&1
  echo "tests exit $?"; grep -E "FAILED|ERROR|passed|failed" "$out/gpu-tests.log" | grep -v "^\[gw" | tail -30
  grep -E "^\[gw[0-9]+\] .*(FAILED|ERROR)" "$out/gpu-tests.log" | head -20
fi
if [ "$sweep" -gt 0 ]; then
  timeout "$sweep" python3 bench/sweep.py --out "$out/sweep" --db "$out/tuning.json" "$@" \
    > "$out/sweep.log" 2>&1
  echo "sweep exit $?"; grep -v "it/s\]\|s/it\]\|kernel/s\]\|variant/s\]" "$out/sweep.log" | tail -40
fi
