#!/usr/bin/env bash
# On the device (eighteenth session): the register-tiled float32 path (compute='tiled'): its GPU
# tests, then seed-fp32-verify timed at three pipeline depths and three split counts beside the
# shipped GEMV-style config.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 240 python3 -m pytest -q -x tests/test_tiled_gpu.py > "$out/tiled-tests.log" 2>&1
echo "tiled tests exit $?"; tail -3 "$out/tiled-tests.log"
for st in 2 3 4; do
  timeout 120 python3 bench/tiled_probe.py seed-fp32-verify $st 16 8 32 >> "$out/tiled.jsonl" 2>> "$out/tiled.err"
done
timeout 100 python3 bench/time_shipped.py --reps 10 seed-fp32-verify >> "$out/tiled.jsonl" 2>> "$out/tiled.err"
python3 - "$out/tiled.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['config']:40s} s{r.get('kv_splits', '-')} {r['status']} {r.get('median_us') or 0:.1f} err={r.get('error')} {str(r.get('detail') or '')[:200]}")
PY
tail -5 "$out/tiled.err"
