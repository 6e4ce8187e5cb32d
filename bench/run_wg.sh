#!/usr/bin/env bash
# On the device (thirty-seventh session): compute-sanitizer on sm_120's new decode default's kind
# (48-head three-row block, four stages, ring_slack 1, the PDL merge; tests/sanitize_sample.py's
# new H = 96 variant): memcheck, racecheck, synccheck; then racecheck with one empty-barrier
# arrival a thread (bench/ring_racecheck.py thread), where the lane-0 arrival's false hazards go.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
md5sum kgen/mla/*.py templates/mla/mma/*.cuh templates/common/*.cuh tests/sanitize_sample.py > "$out/tree.md5"
bash bench/sanitize.sh 80 'h96_t1.*_rs1'
timeout 80 compute-sanitizer --tool racecheck --report-api-errors no python3 bench/ring_racecheck.py thread 'h96_t1.*_rs1' \
  > "$out/ring-racecheck-thread.log" 2>&1
echo "racecheck thread exit $?: $(grep -c '^ok' "$out/ring-racecheck-thread.log") ok; $(tail -1 "$out/ring-racecheck-thread.log")"
