#!/usr/bin/env bash
# On the device (eighteenth session): the tiled path with its KV row pointers looked up once per
# tile and its step counters counted along: GPU tests, seed-fp32-verify timed.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 200 python3 -m pytest -q -x tests/test_tiled_gpu.py > "$out/tiled-tests.log" 2>&1
echo "tiled tests exit $?"; tail -2 "$out/tiled-tests.log"
for st in ${STAGES_LIST:-3 4}; do
  for s in ${SPLITS_LIST:-16}; do
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
tail -3 "$out/tiled.err"
