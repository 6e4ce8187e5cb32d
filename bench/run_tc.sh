#!/usr/bin/env bash
# On the device (thirty-fourth session): does sm_120's default want the specialised block (two
# roles, 8 warps, 87 KB: one an SM) for decode of more than 16 heads too? The heuristic takes it
# only for H <= 16 (one head group), from the twentieth session's sm_120-occupancy A/B; the H200's
# own sweep picked it for kimi-tp1-decode (H = 64, B = 1, 16-head groups). bench/sm120_like.py
# (the H200 at sm_120's 100 KB an SM) on decode shapes of 32-128 heads, B = 1-16: the sm_120
# default (two 44 KB 4-warp blocks an SM) against the specialised variant (splits refit). Then the
# GPU suite on this tree (after the Items::place rename; 23 entries re-stamped, SASS identical).
# (Ran with its own inline table of the JSON lines; it now shows sm120_like.py's own lines.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
ws=specialize=1,num_warps=8,smem_stages=4,min_blocks=0,split_softmax=1,qk_ahead=0,block_n=16,col_groups=4
runs=()
for shape in H=64,T=1,B=1,S=4096 H=64,T=1,B=1,S=16384 H=64,T=1,B=1,S=65536 H=128,T=1,B=1,S=16384 \
    H=32,T=1,B=1,S=16384 H=64,T=1,B=2,S=16384 H=64,T=1,B=4,S=16384 H=64,T=1,B=16,S=4096; do
  runs+=("$shape" "$shape:$ws")
done
timeout 280 python3 bench/sm120_like.py --reps 20 "${runs[@]}" > "$out/sm120_ws.jsonl" 2> "$out/sm120_ws.err"
echo "sm120_like exit $?"
grep "^sm120_like:" "$out/sm120_ws.err"
md5sum kgen/tuned/tuning.json templates/mla/mma/*.cuh templates/mla_sparse/*.cuh > "$out/tree.md5"
bash bench/gpu_suite.sh $((570 - SECONDS)) "$out/gpu-tests.log"
