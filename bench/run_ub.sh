#!/usr/bin/env bash
# On the device (thirty-fifth session): run_ua.sh found the three-row 12-warp block 10% faster
# than sm_120's default on kimi-tp1-verify-tree (H = 64) at sm_120's occupancy and 11-20% slower
# on the two H = 8 verify cases. Does the gain hold across verify shapes of many heads? The
# default against three-row variants (48-row blocks, ragged head groups where 48 rows do not
# divide H x T), 2 and 4 stages, splits refit; bench/sm120_like.py, 20 reps.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
w12=num_warps=12,col_groups=4,min_blocks=1
runs=()
add() {  # shape, heads per block of 48 rows
  runs+=("$1" "$1:heads_per_block=$2,$w12,smem_stages=2" "$1:heads_per_block=$2,$w12,smem_stages=4")
}
add kimi-tp1-verify-tree 3
add H=128,T=16,B=1,S=16384,mask=tree 3
add H=64,T=16,B=4,S=4096,mask=tree 3
add H=32,T=16,B=1,S=16384,mask=tree 3
add H=16,T=16,B=1,S=16384,mask=tree 3
add H=48,T=16,B=1,S=16384,mask=tree 3
add H=64,T=8,B=1,S=16384,mask=tree 6
add H=128,T=4,B=8,S=8192,mask=tree 12
add H=64,T=16,B=1,S=65536,mask=tree 3
add H=16,T=4,B=32,S=4096,mask=tree 12
timeout 450 python3 bench/sm120_like.py --reps 20 "${runs[@]}" > "$out/sm120_w12b.jsonl" 2> "$out/sm120_w12b.err"
echo "sm120_like exit $?"
grep "^sm120_like:" "$out/sm120_w12b.err" | sed 's/  */ /g'
