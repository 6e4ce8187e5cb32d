#!/usr/bin/env bash
# On the device: Nsight Compute's full set, with per-SASS-instruction stall samples, for one launch
# of each named grid case's chosen config (bench/launch_once.py; CASE:field=value overrides too).
# Output under $OUT: ncu.tar.gz (the reports and their CSV pages), and three summaries: the stall
# samples by kind of instruction (bench/stall_summary.py) in ncu-stalls.txt, the shared-memory
# wavefronts over the ideal per instruction (bench/shared_excess.py) in ncu-shared.txt, the
# details page's headline metrics (bench/ncu_details.py) in ncu-details.txt.
#   bash bench/ncu.sh [--kv-format FORMAT] CASE [CASE ...]   (FORMAT: dense cases on an fp8 cache)
set -uo pipefail
format=()
[ "${1:-}" = --kv-format ] && { format=(--kv-format "$2"); shift 2; }
[ $# -gt 0 ] || { sed -n '2,9p' "$0"; exit 2; }
out=${OUT:-gpu-out}; mkdir -p "$out/ncu"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=${KGEN_CACHE_DIR:-/tmp/kgen-cache}
python3 bench/launch_once.py "${format[@]}" --compile "$@" > "$out/ncu/compile.log" 2>&1
for case in "$@"; do
  name=${case//[:=,]/_}
  timeout 120 ncu --clock-control none --set full -k regex:mla_.*attention -c 1 -f \
    -o "$out/ncu/$name" python3 bench/launch_once.py "${format[@]}" "$case" > "$out/ncu/$name.log" 2>&1
  ncu -i "$out/ncu/$name.ncu-rep" --page source --csv --print-source sass > "$out/ncu/$name-source.csv" 2>&1
  ncu -i "$out/ncu/$name.ncu-rep" --page details --csv > "$out/ncu/$name-details.csv" 2>&1
  ncu -i "$out/ncu/$name.ncu-rep" --page raw --csv > "$out/ncu/$name-raw.csv" 2>&1
  echo "$case: $(grep -c . "$out/ncu/$name-source.csv") source rows"
done
python3 bench/stall_summary.py "$out"/ncu/*-source.csv > "$out/ncu-stalls.txt" 2>&1
python3 bench/shared_excess.py "$out"/ncu/*-source.csv > "$out/ncu-shared.txt" 2>&1
{ python3 bench/ncu_details.py "$out"/ncu/*-details.csv
  python3 bench/ncu_details.py --raw "$out"/ncu/*-raw.csv; } > "$out/ncu-details.txt" 2>&1
cat "$out/ncu-stalls.txt"
tar czf "$out/ncu.tar.gz" -C "$out" ncu && rm -rf "$out/ncu"
