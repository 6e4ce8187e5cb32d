#!/usr/bin/env bash
# On the device (eighteenth session): the tiled path's P.V steps of 16 V rows where the 64-dim
# q.K^T steps' buffers hold them (13 steps a tile instead of 17): tests, sanitizer, timing, and
# the seed-fp32-verify sweep again (its tuning entry, stamped with this code).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 200 python3 -m pytest -q -x tests/test_tiled_gpu.py > "$out/tiled-tests.log" 2>&1
echo "tiled tests exit $?"; tail -1 "$out/tiled-tests.log"
for st in 2 3; do
  for s in 16 33; do
    timeout 120 python3 bench/time_shipped.py --reps 10 "seed-fp32-verify:compute=tiled,heads_per_block=8,vec_width=4,num_warps=8,block_n=64,smem_stages=$st,kv_splits=$s" \
      >> "$out/tiled.jsonl" 2>> "$out/tiled.err"
  done
done
python3 - "$out/tiled.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['case'].split(',', 1)[-1]:40s} {r['status']} {r.get('median_us') or 0:.1f} err={r.get('error')}")
PY
timeout 200 python3 -m kgen sweep --grid kgen/tune/grid.json --case seed-fp32-verify --compute tiled \
  --heads-per-block 8 4 --reps 10 --db "$out/tiled-db.json" --out /tmp/sweep > "$out/sweep.log" 2>&1
echo "sweep exit $?"; grep -A4 "^case" "$out/sweep.log"; rm -f "$out"/*.lock
bash bench/sanitize.sh 90 tiled
