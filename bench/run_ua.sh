#!/usr/bin/env bash
# On the device (thirty-fifth session): does sm_120's default for verification want one 12-warp
# block of three 16-row groups (12 warps an SM) instead of two 4-warp blocks of 44 KB (8)? The
# three-row block is decode-only today (with a mask it spilled on sm_120); the H200 runs the
# verify entries at 12 warps an SM, sm_120's default at 8. bench/sm120_like.py (the H200 at
# sm_120's 100 KB an SM) on the three verify cases: the default against three-row variants
# (ragged head groups, splits refit). Then compute-sanitizer on the specialised sample variants
# (the thirty-fourth session's bench/run_te.sh, not run then).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
w12=num_warps=12,col_groups=4,min_blocks=1
runs=()
for c in kimi-tp8-verify-tree kimi-tp1-verify-tree; do
  runs+=("$c" "$c:heads_per_block=3,$w12,smem_stages=2" "$c:heads_per_block=3,$w12,smem_stages=3"
         "$c:heads_per_block=3,$w12,smem_stages=4")
done
c=kimi-tp8-verify-batch
runs+=("$c" "$c:heads_per_block=6,$w12,smem_stages=3" "$c:heads_per_block=5,$w12,smem_stages=3"
       "$c:heads_per_block=6,$w12,smem_stages=4" "$c:heads_per_block=4,num_warps=8,smem_stages=3")
timeout 300 python3 bench/sm120_like.py --reps 20 "${runs[@]}" > "$out/sm120_w12.jsonl" 2> "$out/sm120_w12.err"
echo "sm120_like exit $?"
grep "^sm120_like:" "$out/sm120_w12.err"
bash bench/sanitize.sh 60 '_ws$'
