#!/usr/bin/env bash
# On the device (thirty-eighth session): where every grid case stands on main (bench/retime.py,
# dense and sparse: the shipped entries, the heuristic default, plain torch, graph replay, each
# checked against the float64 oracle), for the standing tables of bench/RESULTS.md.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 330 python3 bench/retime.py "$out/retime.json" > "$out/retime.log" 2>&1
echo "dense retime exit $?"; grep -v '%|' "$out/retime.log" | tail -16
timeout 230 python3 bench/retime.py "$out/retime-sparse.json" --family sparse > "$out/retime-sparse.log" 2>&1
echo "sparse retime exit $?"; grep -v '%|' "$out/retime-sparse.log" | tail -12
