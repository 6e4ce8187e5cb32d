#!/usr/bin/env bash
# On the device (eighteenth session): the register-tiled float32 path (compute='tiled'): its GPU
# tests, then seed-fp32-verify timed at three pipeline depths and three split counts beside the
# shipped config (then the GEMV-style one).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 240 python3 -m pytest -q -x tests/test_tiled_gpu.py > "$out/tiled-tests.log" 2>&1
echo "tiled tests exit $?"; tail -3 "$out/tiled-tests.log"
for st in 2 3 4; do
  for s in 16 8 32; do
    timeout 120 python3 bench/time_shipped.py --reps 10 "seed-fp32-verify:compute=tiled,heads_per_block=8,vec_width=4,num_warps=8,block_n=64,smem_stages=$st,kv_splits=$s" \
      >> "$out/tiled.jsonl" 2>> "$out/tiled.err"
  done
done
timeout 100 python3 bench/time_shipped.py --reps 10 seed-fp32-verify >> "$out/tiled.jsonl" 2>> "$out/tiled.err"
python3 - "$out/tiled.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['case'].split(',', 1)[-1]:40s} {r['status']} {r.get('median_us') or 0:.1f} err={r.get('error')}")
PY
tail -5 "$out/tiled.err"
