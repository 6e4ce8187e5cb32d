#!/usr/bin/env bash
# On the device (thirty-sixth session): the three-row 12-warp block with its KV tile ring on a
# barrier a stage (Config.ring_slack k: row groups up to k tiles apart, copies leading by
# smem_stages - 1 - k), oracle-checked and timed (20 reps): (1) on the H200 itself
# (bench/offgrid.py: its default against three-row variants, st4-st8), (2) at sm_120's occupancy
# (bench/sm120_like.py: sm_120's default, three-row st4 on the tree shapes, against rs1 / rs2).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
w12=num_warps=12,col_groups=4,min_blocks=1,split_softmax=1,qk_ahead=0
runs=()
add() {  # shape, heads per block
  runs+=("$1" "$1:heads_per_block=$2,$w12,smem_stages=4")
  for v in 4:1 4:2 6:2 6:3 8:3 8:4; do
    runs+=("$1:heads_per_block=$2,$w12,smem_stages=${v%:*},ring_slack=${v#*:}")
  done
}
add H=64,T=16,B=1,S=16384,mask=tree 3    # kimi-tp1-verify-tree
add H=8,T=16,B=1,S=16384,mask=tree 3     # kimi-tp8-verify-tree
add H=128,T=1,B=8,S=8192,mask=none 48    # dsv3-tp1-batch
add H=48,T=1,B=16,S=4096,mask=none 48
timeout 330 python3 bench/offgrid.py --reps 20 "${runs[@]}" > "$out/h200_ring.jsonl" 2> "$out/h200_ring.err"
echo "offgrid exit $?"
python3 - "$out/h200_ring.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['run'][:40]:40s} {r['config']:44s} s{r['kv_splits']:<4} {r['regs']:4d} "
          f"{r['blocks_per_sm']}/SM {r['status']:5s} {r.get('median_us') or 0:8.1f} us")
PY
runs=()
for shape in kimi-tp1-verify-tree H=64,T=8,B=4,S=8192,mask=tree H=128,T=3,B=1,S=16384,mask=tree \
    H=128,T=4,B=2,S=16384,mask=tree H=48,T=2,B=16,S=4096,mask=tree; do
  runs+=("$shape" "$shape:ring_slack=1" "$shape:ring_slack=2")
done
timeout 200 python3 bench/sm120_like.py --reps 20 "${runs[@]}" > "$out/sm120_ring.jsonl" 2> "$out/sm120_ring.err"
echo "sm120_like exit $?"
grep "^sm120_like:" "$out/sm120_ring.err" | sed 's/  */ /g'
