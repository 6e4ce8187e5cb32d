#!/usr/bin/env bash
# On the device (thirty-ninth session): the sparse kernels at more blocks an SM than the sweep's
# min_blocks axis (0, 1) ever asked for: 8-warp blocks of 16-row tiles at min_blocks=2 (127 registers,
# 0 spills on sm_90 and sm_120: two blocks, 16 warps an SM on the H200) and 4-warp 16-row blocks at
# min_blocks=3 (168 registers: three blocks), each case at a few split counts; the shipped entries
# beside them (bench/time_shipped.py: oracle-checked, L2 flushed, median of 20).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
k=dsv32-sparse
A=heads_per_block=16,num_warps=8,col_groups=8,block_n=16,min_blocks=2
B=heads_per_block=16,num_warps=4,col_groups=4,block_n=16,min_blocks=3
runs=()
add() { local c=$1; shift; runs+=("$k-$c"); for s in "$@"; do runs+=("$k-$c:$A,kv_splits=$s" "$k-$c:$B,kv_splits=$s"); done; }
add h16-b128 1 2 4
add h16-verify 1 2
add h16-b32 4 8 16
add h64-b32 1 2 4
add h64-b128 1 2
add h128-b32 1 2
add h128-b128 1
add h128-b1 16 32 64
add h64-b1 32 64
add h16-b1 64 128
timeout 560 python3 bench/time_shipped.py --reps 20 "${runs[@]}" > "$out/mb.jsonl" 2> "$out/mb.err"
echo "time_shipped exit $?"; tail -3 "$out/mb.err"
python3 - "$out/mb.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['case'][13:]:80} {r['status']:6} {r.get('median_us') or 0:8.1f} {r.get('error') or ''}")
PY
exit 0
