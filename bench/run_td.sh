#!/usr/bin/env bash
# On the device (thirty-fourth session), after the heuristic change (sm_120's default specialises
# decode in several 16-head groups where its one wave fills the SMs about as well): the new sm_120
# defaults of the four grid cases it moves, at sm_120's occupancy on this GPU's 132 SMs (where all
# four take it), against the old default (the one-role block, reproduced with overrides, splits
# refit); the three verification cases with the specialised block as a variant (a lead: the rule
# leaves verification alone); then the GPU suite on this tree.
# (Ran with its own inline table of the JSON lines; it now shows sm120_like.py's own lines.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
old=specialize=0,num_warps=4,smem_stages=2,min_blocks=1
ws=specialize=1,num_warps=8,smem_stages=4,min_blocks=0,split_softmax=1,qk_ahead=0,block_n=16,col_groups=4
runs=()
for c in kimi-tp1-decode kimi-tp1-decode-64k kimi-tp1-batch dsv3-tp1-batch; do runs+=("$c" "$c:$old"); done
for c in kimi-tp8-verify-tree kimi-tp8-verify-batch kimi-tp1-verify-tree; do runs+=("$c" "$c:$ws"); done
timeout 250 python3 bench/sm120_like.py --reps 20 "${runs[@]}" > "$out/sm120_new.jsonl" 2> "$out/sm120_new.err"
echo "sm120_like exit $?"
grep "^sm120_like:" "$out/sm120_new.err"
md5sum kgen/tuned/tuning.json kgen/mla/heuristic.py templates/mla/mma/*.cuh > "$out/tree.md5"
bash bench/gpu_suite.sh $((560 - SECONDS)) "$out/gpu-tests.log"
