#!/usr/bin/env bash
# On the device (thirty-seventh session): the GPU suite on this tree (kernel.cuh's two arrivals on
# `full` folded into one helper, SASS-identical; the heuristic's ring choice moved into
# _three_row_groups, defaults identical), then three-row blocks against the H200's default on
# verification shapes whose head groups 48 rows divide (no ragged group).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
find kgen templates tests -type f \( -name '*.py' -o -name '*.cuh' -o -name '*.jinja' -o -name '*.json' \) \
  | sort | xargs md5sum > "$out/tree.md5"
bash bench/gpu_suite.sh 290 "$out/gpu-tests.log"
w12=num_warps=12,col_groups=4,min_blocks=1,split_softmax=1,qk_ahead=0
runs=()
for v in "H=48,T=16,B=1,S=16384,mask=tree 3" "H=96,T=16,B=1,S=16384,mask=tree 3" \
    "H=48,T=8,B=2,S=16384,mask=tree 6" "H=96,T=8,B=1,S=16384,mask=causal 6"; do
  shape=${v% *} hb=${v#* }
  runs+=("$shape" "$shape:heads_per_block=$hb,$w12,smem_stages=4,ring_slack=1")
done
PYTHONPATH=. timeout 150 python3 bench/offgrid.py --reps 20 "${runs[@]}" > "$out/h200_3row.jsonl" 2> "$out/h200_3row.err"
echo "offgrid exit $?"
python3 - "$out/h200_3row.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['run'][:40]:40s} {r['config']:44s} s{r['kv_splits']:<4} {r['regs']:4d} "
          f"{r['blocks_per_sm']}/SM {r['status']:5s} {r.get('median_us') or 0:8.1f} us")
PY
