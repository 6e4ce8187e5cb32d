#!/usr/bin/env bash
# On the device (twenty-sixth session, call 2), two probes from copies of their branches' trees
# (untracked here: hgprobe/ = hg-major-probe, w12probe/ = the w12-probe branch, its one commit since part of ragged-heads: num_warps 12 allowed on the mma path):
# 1. knock-in hgmajor (the head group as blockIdx.x: a split's head groups neighbours in dispatch
#    order) on the multi-head-group cases (hg-major-probe's bench/run_jj.sh), into jj/;
# 2. 12-warp 48-row blocks (three row groups on one KV pipeline, one block an SM: what fits
#    sm_120's 100 KB at 12 warps an SM) against the H200's 3 x 4-warp default and the sm_120-like
#    2 x 4-warp blocks (min_blocks 2), on shapes 48 divides (bench/offgrid.py, two rounds), into w12/.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/jj" "$out/w12"
(cd hgprobe && OUT="$out/jj" timeout 290 bash bench/run_jj.sh) | tail -30
W=heads_per_block=48,num_warps=12,min_blocks=1
runs=()
for s in H=96,B=8,S=8192 H=48,B=16,S=4096 H=96,B=1,S=65536; do
  runs+=("$s" "$s:smem_stages=2,qk_ahead=0,min_blocks=2" "$s:$W,smem_stages=2,qk_ahead=0"
    "$s:$W,smem_stages=3,qk_ahead=0" "$s:$W,smem_stages=4,qk_ahead=1")
done
s=H=48,T=16,mask=tree,B=1,S=16384
runs+=("$s" "$s:smem_stages=2,qk_ahead=0,min_blocks=2"
  "$s:heads_per_block=3,num_warps=12,min_blocks=1,smem_stages=3,qk_ahead=0"
  "$s:heads_per_block=3,num_warps=12,min_blocks=1,smem_stages=4,qk_ahead=1")
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
for round in 1 2; do
  (cd w12probe && PYTHONPATH=. timeout 130 python3 bench/offgrid.py --reps 20 "${runs[@]}") \
    > "$out/w12/round-$round.jsonl" 2> "$out/w12/round-$round.err"
  echo "offgrid round $round exit $?"
done
python3 - "$out"/w12/round-*.jsonl <<'PY'
import json, sys
rows = {}
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        rows.setdefault(r["run"], [r["config"], r["kv_splits"], r["regs"], r["spills"], r["blocks_per_sm"], r["status"], []])[-1].append(r["median_us"])
for run, (config, splits, regs, spills, bps, status, times) in rows.items():
    print(f"{run:100s} {config:40s} s{splits:<3d} r{regs} sp{spills} b{bps} {status} " + " ".join(f"{t:.1f}" for t in times))
PY
