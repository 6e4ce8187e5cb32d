#!/usr/bin/env bash
# On the device (twenty-eighth session, call 2): the whole GPU suite on main (the last one, ld/,
# had the sparse oracle's unexplained gap); then Nsight Compute's duration of each kernel (the
# attention kernel and, with pdl_combine, mla_combine) of one launch of the B = 1 cases nearest
# their targets, to see how a 12-25 us call divides between the two kernels and the launches.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
git ls-files -s templates kgen tests | md5sum > "$out/tree.md5"
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
cases="dsv32-sparse-h128-b1 dsv32-sparse-h16-b1 kimi-tp1-decode kimi-tp8-decode-long kimi-tp1-decode-64k"
timeout 120 python3 bench/profile.py --compile $cases > "$out/compile.log" 2>&1; echo "compile exit $?"
for case in $cases; do
  timeout 60 ncu --clock-control none -k regex:mla_ \
    --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,launch__grid_size,launch__registers_per_thread \
    --csv python3 bench/profile.py "$case" > "$out/ncu-$case.csv" 2>&1
  echo "$case exit $?"
  grep -E '"(mla_[a-z_]+)"' "$out/ncu-$case.csv" | awk -F'","' '{print $5, $(NF-2), $(NF-1), $NF}' | head -12
done
