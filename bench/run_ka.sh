#!/usr/bin/env bash
# On the device (twenty-sixth session, call 1): the whole GPU suite on main (the heuristic's
# spill-free defaults and the stricter GPU tests landed after the last suite ran), then the
# float32 FMA defaults that moved from 8 warps to 4 timed both ways. (The recorded run, ka/, used
# bench/warps_ab.py, since generalised to bench/offgrid.py: these are its equivalent arguments.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
git ls-files -s templates kgen | md5sum > "$out/tree.md5" 2>/dev/null || true
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > "$out/gpu.txt"
bash bench/gpu_suite.sh 400 "$out/gpu-tests.log"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
shapes=(
  H=3,T=3,mask=causal,B=1,S=2048,dtype=float32
  H=12,T=1,B=1,S=2048,dtype=float32
  H=1,T=12,mask=causal,B=1,S=2048,dtype=float32
  H=12,T=1,B=16,S=4096,dtype=float32
  H=5,T=2,mask=causal,B=4,S=4096,dtype=float32
  H=6,T=2,mask=tree,B=8,S=8192,dtype=float32
)
runs=(); for s in "${shapes[@]}"; do runs+=("$s" "$s:num_warps=8"); done
timeout 150 python3 bench/offgrid.py --reps 30 "${runs[@]}" > "$out/warps_ab.jsonl" 2> "$out/warps_ab.err"
echo "offgrid exit $?"
python3 - "$out/warps_ab.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['run']:58s} {r['config']:24s} regs {r['regs']:3d} spills {r['spills']:4d} {r['status']} {r['median_us']}")
PY
