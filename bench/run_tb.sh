#!/usr/bin/env bash
# On the device (thirty-fourth session): where every grid case stands on main, for the standing
# table of bench/RESULTS.md. bench/retime.py on the dense cases and on the sparse ones (config='auto'
# on this GPU = the shipped entries; the heuristic default; plain torch; graph replay; each checked
# against the float64 oracle), then Nsight Compute (bench/stalls.sh) on the three dense cases
# furthest from their targets: dsv3-tp1-batch, kimi-tp1-decode-64k, kimi-tp8-verify-batch.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 300 python3 bench/retime.py "$out/retime.json" > "$out/retime.log" 2>&1
echo "dense retime exit $?"; grep -v '%|' "$out/retime.log" | tail -16
timeout 200 python3 bench/retime.py "$out/retime-sparse.json" --family sparse > "$out/retime-sparse.log" 2>&1
echo "sparse retime exit $?"; grep -v '%|' "$out/retime-sparse.log" | tail -12
bash bench/stalls.sh dsv3-tp1-batch kimi-tp1-decode-64k kimi-tp8-verify-batch > /dev/null 2>&1
echo "stalls exit $?"; cat "$out/stalls-details.txt" | head -60
