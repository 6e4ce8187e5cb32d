#!/usr/bin/env bash
# On the device machine, one call: compute-sanitizer (memcheck, racecheck, synccheck) on
# tests/sanitize_sample.py, then the tensor-core sweep of the grid that produced the shipped
# tuning (2026-11-30, second session). Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/sanitize.sh 90
timeout 380 python3 bench/sweep.py --out "$out/sweep" --db "$out/tuning.json" --compute mma --num-warps 4 8 --col-groups 4 8 --mma-tiles 3x16 4x16 2x32 --min-blocks 0 1 --qk-ahead 0 1 --reps 10 > "$out/sweep.log" 2>&1
echo "sweep exit $?"; grep -v "it/s\]\|s/it\]\|kernel/s\]\|variant/s\]" "$out/sweep.log" | grep -E "best|wrong|failed|Error|error" | head -40
