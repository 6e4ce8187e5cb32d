#!/usr/bin/env bash
# On the device: Nsight Compute's full set, with per-SASS-instruction stall samples, for one
# launch of each named grid case's chosen config. Output: $OUT/stalls.tar.gz, and the samples by
# kind of instruction (bench/stall_summary.py) in $OUT/stalls-summary.txt, the details page's
# headline metrics (bench/ncu_details.py) in $OUT/stalls-details.txt, the shared-memory wavefronts
# over the ideal per instruction (bench/shared_excess.py) in $OUT/stalls-shared.txt.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/stalls"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
python3 bench/profile.py --compile "$@" > "$out/stalls/compile.log" 2>&1
for case in "$@"; do
  timeout 120 ncu --set full -k regex:mla_.*attention -c 1 -f -o "$out/stalls/$case" \
    python3 bench/profile.py "$case" > "$out/stalls/$case.log" 2>&1
  ncu -i "$out/stalls/$case.ncu-rep" --page source --csv --print-source sass > "$out/stalls/$case-source.csv" 2>&1
  ncu -i "$out/stalls/$case.ncu-rep" --page details --csv > "$out/stalls/$case-details.csv" 2>&1
  ncu -i "$out/stalls/$case.ncu-rep" --page raw --csv > "$out/stalls/$case-raw.csv" 2>&1
  echo "$case: $(grep -c . "$out/stalls/$case-source.csv") source rows"
done
python3 bench/stall_summary.py "$out"/stalls/*-source.csv > "$out/stalls-summary.txt" 2>&1
python3 bench/shared_excess.py "$out"/stalls/*-source.csv > "$out/stalls-shared.txt" 2>&1
{ python3 bench/ncu_details.py "$out"/stalls/*-details.csv
  python3 bench/ncu_details.py --raw "$out"/stalls/*-raw.csv; } > "$out/stalls-details.txt" 2>&1
cat "$out/stalls-summary.txt"
tar czf "$out/stalls.tar.gz" -C "$out" stalls && rm -rf "$out/stalls"
