#!/usr/bin/env bash
# On the device: Nsight Compute's full set, with per-SASS-instruction stall samples, for one
# launch of each named grid case's chosen config. Output: $OUT/stalls.tar.gz.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/stalls"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
python3 bench/profile.py --compile "$@" > "$out/stalls/compile.log" 2>&1
for case in "$@"; do
  timeout 120 ncu --set full -k regex:mla_attention -c 1 -f -o "$out/stalls/$case" \
    python3 bench/profile.py "$case" > "$out/stalls/$case.log" 2>&1
  ncu -i "$out/stalls/$case.ncu-rep" --page source --csv --print-source sass > "$out/stalls/$case-source.csv" 2>&1
  ncu -i "$out/stalls/$case.ncu-rep" --page details --csv > "$out/stalls/$case-details.csv" 2>&1
  echo "$case: $(grep -c . "$out/stalls/$case-source.csv") source rows"
done
tar czf "$out/stalls.tar.gz" -C "$out" stalls && rm -rf "$out/stalls"
