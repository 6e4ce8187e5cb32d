#!/usr/bin/env bash
# On the device (thirtieth session, call 2): Nsight Compute (full set, one launch each) on
# kimi-tp1-batch's shipped kernel, the knock-in pipe at 5 stages and the unedited qk_ahead +
# split_softmax kernel at 4 stages (both two blocks an SM): what binds the pipelined loop.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/stalls"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
declare -A runs=(
  [shipped]="kimi-tp1-batch"
  [pipe5]="kimi-tp1-batch:qk_ahead=1,smem_stages=5,kv_splits=4@pipe"
  [ahead4]="kimi-tp1-batch:qk_ahead=1,smem_stages=4,kv_splits=4"
)
python3 bench/knockout.py --reps 1 "${runs[@]}" > "$out/warm.txt" 2>&1  # builds into the cache
for label in shipped pipe5 ahead4; do
  timeout 150 ncu --set full -k regex:mla_attention -c 1 -f -o "$out/stalls/$label" \
    python3 bench/knockout.py --reps 1 "${runs[$label]}" > "$out/stalls/$label.log" 2>&1
  ncu -i "$out/stalls/$label.ncu-rep" --page source --csv --print-source sass > "$out/stalls/$label-source.csv" 2>&1
  ncu -i "$out/stalls/$label.ncu-rep" --page details --csv > "$out/stalls/$label-details.csv" 2>&1
  ncu -i "$out/stalls/$label.ncu-rep" --page raw --csv > "$out/stalls/$label-raw.csv" 2>&1
done
python3 bench/stall_summary.py "$out"/stalls/*-source.csv > "$out/stalls-summary.txt" 2>&1
{ python3 bench/ncu_details.py "$out"/stalls/*-details.csv
  python3 bench/ncu_details.py --raw "$out"/stalls/*-raw.csv; } > "$out/stalls-details.txt" 2>&1
grep -E "Issue Slots Busy|Eligible Warps|Duration|L2 Cache Throughput|DRAM Throughput|hmma_cycles_active.avg.pct_of_peak_sustained_active|wavefronts_mem_shared.sum.pct|stall|Stall" "$out/stalls-details.txt" | head -60
head -40 "$out/stalls-summary.txt"
tar czf "$out/stalls.tar.gz" -C "$out" stalls && rm -rf "$out/stalls"
