#!/usr/bin/env bash
# On the device (twenty-third session): a contiguous bool tree mask read by the kernel as it is
# (Params.mask_bool). The four tree entries re-timed (their SASS moved) and merged into the
# database here; the whole GPU suite on that tree and database; bool against packed again;
# compute-sanitizer on the sample's tree variants; the host cost per call.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 110 python3 bench/retune_shipped.py --reps 10 --open qk_ahead=0,1 \
  --open mma_stage_tiles=2x16,3x16,4x16,2x32 --out /tmp/rt-tree --db "$out/retuned.json" \
  kimi-tp8-verify-batch kimi-tp1-verify-tree kimi-tp8-verify-tree > "$out/retune-tree.log" 2>&1
echo "retune tree exit $?"
timeout 60 python3 bench/retune_shipped.py --reps 10 --out /tmp/rt-fp32 --db "$out/retuned.json" \
  seed-fp32-verify > "$out/retune-fp32.log" 2>&1
echo "retune fp32 exit $?"; grep '^{"case"' "$out"/retune-*.log | cut -c1-60,400-
python3 bench/merge_db.py --replace kgen/tuned/tuning.json kgen/tuned/tuning.json "$out/retuned.json"
md5sum kgen/tuned/tuning.json templates/*/*.cuh templates/*/*/*.cuh templates/*/*.jinja kgen/mla/runner.py > "$out/tree.md5"
bash bench/gpu_suite.sh 280 "$out/gpu-tests.log"
timeout 40 python3 bench/mask_pack_cost.py > "$out/mask_pack.jsonl" 2> "$out/mask_pack.err"; cat "$out/mask_pack.jsonl"
bash bench/sanitize.sh 30 tests/sanitize_sample.py tree tree
timeout 40 python3 bench/host_overhead.py > "$out/host_overhead.txt" 2>&1; grep -E "add|run|attention" "$out/host_overhead.txt"
