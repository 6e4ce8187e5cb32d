#!/usr/bin/env bash
# For the next session's first device call, on branch ragged-heads (the head-group-major grid
# and ragged head groups; every shipped entry current): the whole GPU suite (its one run, kd/,
# timed out with failures before the ragged workspace fix: a ragged last head group's slots lay
# past a workspace sized for q_len x heads rows a split); compute-sanitizer on the sample's ragged
# and 12-warp variants; the ragged 48-row block at dsv3-tp1-batch's shape against the H200's
# default and the sm_120-like 2 x 4-warp blocks (two rounds).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
md5sum kgen/tuned/tuning.json templates/mla/*.cuh templates/mla/mma/*.cuh > "$out/tree.md5"
bash bench/gpu_suite.sh 360 "$out/gpu-tests.log"
bash bench/sanitize.sh 50 "h5_t1_p16_none hb3|_w12_"
s=H=128,B=8,S=8192
runs=("$s" "$s:smem_stages=2,qk_ahead=0,min_blocks=2"
  "$s:heads_per_block=48,num_warps=12,min_blocks=1,smem_stages=3,qk_ahead=0")
for round in 1 2; do
  timeout 40 python3 bench/offgrid.py --reps 20 "${runs[@]}" > "$out/ragged-$round.jsonl" 2> "$out/ragged-$round.err"
  echo "offgrid round $round exit $?"; cut -c1-200 "$out/ragged-$round.jsonl"
done
