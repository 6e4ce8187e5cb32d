#!/usr/bin/env bash
# On the device (twenty-first session): the gather ceiling of the sparse batch cases
# (bench/gather_ceiling.py); a full sparse sweep of dsv32-sparse-h128-b1 with the PDL merge (its
# shipped entry's trials covered 14 configs); ncu of the shipped h16-b128 kernel.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 150 python3 bench/gather_ceiling.py > "$out/gather_ceiling.txt" 2>&1; echo "ceiling exit $?"
cat "$out/gather_ceiling.txt"
timeout 300 python3 -m kgen sweep --grid kgen/tune/grid.json --case dsv32-sparse-h128-b1 \
  --pdl-combine 1 --db "$out/h128b1.json" --out /tmp/sweep-h128b1 > "$out/sweep_h128b1.txt" 2>&1
echo "sweep exit $?"; tail -25 "$out/sweep_h128b1.txt"
timeout 150 bash bench/stalls.sh dsv32-sparse-h16-b128 > "$out/stalls.log" 2>&1; echo "stalls exit $?"
head -60 "$out/stalls-details.txt" 2>/dev/null
