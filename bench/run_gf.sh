#!/usr/bin/env bash
# On the device (twenty-second session): the seven entries the split loop made stale, re-tuned:
# the three tree cases with qk_ahead and the pipeline depth open (the shipped configs of two spill
# 4-8 B on sm_120 now; the sweep records the fastest that does not), the four decode ones pinned
# (their sm_90 SASS moved by a register or two; splits re-chosen); then the whole GPU suite.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 200 python3 bench/retune_shipped.py --reps 10 --open qk_ahead=0,1 \
  --open mma_stage_tiles=2x16,3x16,4x16,2x32 --out /tmp/rt-tree --db "$out/retuned.json" \
  kimi-tp8-verify-batch kimi-tp1-verify-tree kimi-tp8-verify-tree > "$out/retune-tree.log" 2>&1
echo "retune tree exit $?"
timeout 110 python3 bench/retune_shipped.py --reps 10 --out /tmp/rt-none --db "$out/retuned.json" \
  kimi-tp1-batch dsv3-tp1-batch kimi-tp1-decode-64k dsv3-tp8-decode-long > "$out/retune-none.log" 2>&1
echo "retune none exit $?"
python3 - "$out/retuned.json" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1]))["entries"].values():
    best = sorted((t for t in e["trials"] if t[2]), key=lambda t: t[2])[:3]
    print(e["case"], round(e["median_us"], 1), e["config"].get("smem_stages"), e["config"].get("block_n"),
          e["config"].get("qk_ahead"), e["config"].get("kv_splits"), [(t[0], t[1], round(t[2], 1)) for t in best])
PY
bash bench/gpu_suite.sh 270 "$out/gpu-tests.log"
