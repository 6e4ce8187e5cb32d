#!/usr/bin/env bash
# Eighth session, last device call: the whole GPU suite on the final tree (sparse defaults now
# register dequantization), then the new sparse defaults timed on the ten sparse grid cases (the
# sweep's "default" rows; one other variant per case beside them, not merged anywhere).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/ab"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 300 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs > "$out/ab/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/ab/gpu-tests.log")"; grep -E "^(FAILED|ERROR)" "$out/ab/gpu-tests.log" | head
timeout 150 python3 bench/sweep.py --family sparse --out "$out/ab/defaults" --db "$out/ab/defaults.json" \
  --num-warps 4 --col-groups 4 --dequant registers --register-tiles 16 --gather-bytes 16 \
  --min-blocks 1 --reps 10 --seconds 120 > "$out/ab/defaults.log" 2>&1
echo "defaults sweep exit $?"
grep -E "WRONG|wrong|Traceback" "$out/ab/defaults.log" | head -5
grep -E "^\S+ +default " "$out/ab/defaults.log"
tar czf "$out/run-ab.tar.gz" -C "$out" ab && rm -rf "$out/ab"
