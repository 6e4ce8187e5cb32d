#!/usr/bin/env bash
# On the device (thirty-sixth session), after Config.ring_slack and the three-row verification
# defaults taking it: (1) the GPU suite (the ring's new bit-identity test among it); (2) on the
# H200 itself, two shapes whose default is now three-row with the ring (the padding rule)
# against the same config on a block barrier a tile (bench/offgrid.py, 20 reps, two rounds).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
md5sum kgen/mla/*.py kgen/tuned/tuning.json templates/mla/mma/*.cuh templates/common/*.cuh > "$out/tree.md5"
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
runs=()
for shape in H=128,T=3,B=1,S=16384,mask=tree H=64,T=6,B=4,S=8192,mask=tree; do
  runs+=("$shape" "$shape:ring_slack=0")
done
for round in 1 2; do
  timeout 60 python3 bench/offgrid.py --reps 20 "${runs[@]}" > "$out/h200_rs$round.jsonl" 2> "$out/h200_rs$round.err"
  python3 - "$out/h200_rs$round.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['run'][:48]:48s} {r['config']:44s} s{r['kv_splits']:<4} {r['status']:5s} {r.get('median_us') or 0:8.1f} us")
PY
done
