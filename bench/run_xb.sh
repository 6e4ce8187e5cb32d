#!/usr/bin/env bash
# On the device (thirty-eighth session): where every grid case stands on main (bench/retime.py,
# dense and sparse: the shipped entries, the heuristic default, plain torch, graph replay, each
# checked against the float64 oracle), for the standing tables of bench/RESULTS.md; first the host
# cost per call again (bench/host_overhead.py, its rows now taking turns within each round).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 120 python3 bench/host_overhead.py > "$out/host_overhead.txt" 2>&1
echo "host_overhead exit $?"; cat "$out/host_overhead.txt"
timeout 280 python3 bench/retime.py "$out/retime.json" > "$out/retime.log" 2>&1
echo "dense retime exit $?"; grep -v '%|' "$out/retime.log" | tail -16
timeout 180 python3 bench/retime.py "$out/retime-sparse.json" --family sparse > "$out/retime-sparse.log" 2>&1
echo "sparse retime exit $?"; grep -v '%|' "$out/retime-sparse.log" | tail -12
