#!/usr/bin/env bash
# On the device (sixteenth session, final tree): racecheck of the one-role tensor-core sample
# variants (attention.cuh changed for the roles; control for cg/ch), and specialize's final
# hand-off (barrier 0) timed on the cases it helped in cf/.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 200 compute-sanitizer --tool racecheck --report-api-errors no python3 tests/sanitize_sample.py \
  '_mma_c[0-9]+(_mb[0-9]+)?(_qa)?(_sr)?(_ss)?(_sw)?(_pc)?$' > "$out/racecheck-one-role.log" 2>&1
echo "racecheck one-role: $(grep -c '^ok' $out/racecheck-one-role.log) ok; $(tail -1 $out/racecheck-one-role.log)"
WS=specialize=1,num_warps=8,col_groups=4,qk_ahead=0,split_softmax=1,swap_rows=0,smem_stages=4,min_blocks=0
runs=()
for c in kimi-tp1-decode dsv3-tp8-decode-batch dsv3-tp8-decode-wide page1-decode; do runs+=("$c" "$c:$WS"); done
timeout 150 python3 bench/time_shipped.py --reps 10 "${runs[@]}" > "$out/ws-final.jsonl" 2> "$out/ws-final.err"
python3 - "$out/ws-final.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line); print(f"{r['case'][:40]:40s} {r['config']:40s} {r['status']} {r['median_us'] or 0:.1f}")
PY
