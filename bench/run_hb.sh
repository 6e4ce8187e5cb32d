#!/usr/bin/env bash
# On the device (twenty-third session): what the bool mask's packing costs inside the tree cases'
# timed calls (bench/mask_pack_cost.py); the four tree entries re-tuned with the sweep now timing
# calls with the mask packed once (kgen.tune.trials: Side.timed_args), as a serving engine's
# layers take it; the 16-bit ones with qk_ahead and the pipeline depth open as last session.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 120 python3 bench/mask_pack_cost.py > "$out/mask_pack.jsonl" 2> "$out/mask_pack.err"
echo "mask_pack exit $?"; cat "$out/mask_pack.jsonl"; tail -3 "$out/mask_pack.err"
timeout 230 python3 bench/retune_shipped.py --reps 10 --open qk_ahead=0,1 \
  --open mma_stage_tiles=2x16,3x16,4x16,2x32 --out /tmp/rt-tree --db "$out/retuned.json" \
  kimi-tp8-verify-batch kimi-tp1-verify-tree kimi-tp8-verify-tree > "$out/retune-tree.log" 2>&1
echo "retune tree exit $?"
timeout 120 python3 bench/retune_shipped.py --reps 10 --out /tmp/rt-fp32 --db "$out/retuned.json" \
  seed-fp32-verify > "$out/retune-fp32.log" 2>&1
echo "retune fp32 exit $?"
timeout 60 python3 bench/tree_vs_causal.py kimi-tp8-verify-batch kimi-tp8-verify-tree kimi-tp1-verify-tree \
  > "$out/tree_vs_causal.jsonl" 2> "$out/tree_vs_causal.err"; cat "$out/tree_vs_causal.jsonl"
python3 - "$out/retuned.json" <<'PY'
import json, sys
for e in json.load(open(sys.argv[1]))["entries"].values():
    best = sorted((t for t in e["trials"] if t[2]), key=lambda t: t[2])[:3]
    print(e["case"], round(e["median_us"], 1), e["config"].get("smem_stages"), e["config"].get("block_n"),
          e["config"].get("qk_ahead"), e["config"].get("kv_splits"), [(t[0], t[1], round(t[2], 1)) for t in best])
PY
