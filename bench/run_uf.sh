#!/usr/bin/env bash
# On the device (thirty-fifth session): on the H200 itself (three 4-warp blocks an SM fit), does
# verification whose default pads its m16 tile (q_len 3, 6, 12: 12 of 16 rows), or holds few
# rows a block, want the three-row 12-warp block of 48 rows too? At sm_120's occupancy it was
# 24-30% faster there (uc/). bench/offgrid.py: the H200's heuristic default against three-row
# variants (48 / q_len heads, 3 and 4 stages, splits refit), 20 reps.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
w12=num_warps=12,col_groups=4,min_blocks=1,split_softmax=1,qk_ahead=0
runs=()
add() { runs+=("$1" "$1:heads_per_block=$2,$w12,smem_stages=3" "$1:heads_per_block=$2,$w12,smem_stages=4"); }
add H=128,T=3,B=1,S=16384,mask=tree 16
add H=64,T=6,B=4,S=8192,mask=tree 8
add H=128,T=2,B=8,S=8192,mask=tree 24
add H=16,T=12,B=8,S=4096,mask=tree 4
add H=128,T=4,B=2,S=16384,mask=tree 12
add H=64,T=3,B=8,S=4096,mask=tree 16
add H=64,T=16,B=1,S=16384,mask=tree 3
timeout 400 python3 bench/offgrid.py --reps 20 "${runs[@]}" > "$out/h200_w12.jsonl" 2> "$out/h200_w12.err"
echo "offgrid exit $?"
python3 - "$out/h200_w12.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['run'][:70]:70s} {r['config']:40s} s{r['kv_splits']:<4} {r['regs']:4d} regs "
          f"{r['blocks_per_sm']} /SM {r['status']:5s} {r.get('median_us') or 0:8.1f} us")
PY
