#!/usr/bin/env bash
# On the device (thirty-fifth session), after the template changes that let the three-row
# 12-warp block take a draft mask on sm_120 without spills (the draft bits in a 32-bit word where
# q_len <= 32; the epilogue's row check recomputed, not kept live; the ragged merge's register
# allocation for one block an SM): (1) the three shipped tree entries, whose sm_90 SASS the
# first moved, A/B against main before it (abref/ = git archive HEAD kgen templates
# bench/time_shipped.py bench/grid.json pyproject.toml), two decode entries whose SASS did not
# move as drift controls; two alternating rounds of 20. (2) sm_120's new default for verification
# (three-row blocks where their wave fills the SMs) against the old one (overrides), at sm_120's
# occupancy (bench/sm120_like.py), on shapes off the measured set: B = 1-16, q_len 2-16.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/ab.sh treeab 2 20 abref . -- kimi-tp8-verify-tree kimi-tp8-verify-batch \
  kimi-tp1-verify-tree kimi-tp1-decode dsv3-tp1-batch 2>&1 | tee "$out/treeab.txt"
old=num_warps=4,smem_stages=2,min_blocks=1
runs=()
add() { runs+=("$1" "$1:heads_per_block=$2,$old"); }
add kimi-tp1-verify-tree 1
add H=64,T=16,B=1,S=16384,mask=causal 1
add H=64,T=16,B=2,S=16384,mask=tree 1
add H=64,T=8,B=4,S=8192,mask=tree 2
add H=128,T=8,B=1,S=16384,mask=tree 2
add H=128,T=4,B=2,S=16384,mask=tree 4
add H=8,T=12,B=8,S=4096,mask=tree 1
add H=48,T=2,B=16,S=4096,mask=tree 8
add H=32,T=6,B=4,S=8192,mask=tree 2
add H=128,T=3,B=1,S=16384,mask=tree 4
timeout 300 python3 bench/sm120_like.py --reps 20 "${runs[@]}" > "$out/sm120_new.jsonl" 2> "$out/sm120_new.err"
echo "sm120_like exit $?"
grep "^sm120_like:" "$out/sm120_new.err" | sed 's/  */ /g'
