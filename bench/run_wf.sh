#!/usr/bin/env bash
# On the device (thirty-seventh session): sm_120's decode default for H a multiple of 48 (the
# three-row 12-warp block, 48 heads, three stages, lock-step) against four stages and the ring
# (ring_slack 1, 2), at sm_120's occupancy (bench/sm120_like.py), oracle-checked, 20 reps.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=()
for shape in H=48,T=1,B=16,S=4096 H=48,T=1,B=4,S=16384 H=48,T=1,B=1,S=65536 \
    H=96,T=1,B=8,S=8192 H=96,T=1,B=1,S=16384 H=96,T=1,B=32,S=4096,dtype=float16,page_size=16; do
  runs+=("$shape" "$shape:smem_stages=4" "$shape:smem_stages=4,ring_slack=1" "$shape:smem_stages=4,ring_slack=2")
done
timeout 300 python3 bench/sm120_like.py --reps 20 "${runs[@]}" > "$out/sm120_dec.jsonl" 2> "$out/sm120_dec.err"
echo "sm120_like exit $?"
grep "^sm120_like:" "$out/sm120_dec.err" | sed 's/  */ /g'
tail -3 "$out/sm120_dec.err"
