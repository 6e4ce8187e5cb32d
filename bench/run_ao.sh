#!/usr/bin/env bash
# Tenth session: run_an's kernel changes landed, so every 16-bit shipped entry (13 dense, 10
# sparse) re-tuned (bench/retune_shipped.py: configs pinned, split counts re-chosen) and written
# over the shipped database ($OUT/tuning.json: copy it to kgen/tuned/); then the whole GPU suite
# with it. Logs in $OUT/run-ao.tar.gz; a summary on stdout.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/ao"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 340 python3 bench/retune_shipped.py --out "$out/ao/retune" --db "$out/ao/retuned.json" --reps 10 \
  > "$out/ao/retune.log" 2>&1
echo "retune exit $?"; grep '^{' "$out/ao/retune.log" | python3 -c "
import json, sys
for line in sys.stdin:
    r = json.loads(line); c = r['best'] or {}
    print(f\"{r['case']:26s} {r['us']:.1f} hb{c.get('heads_per_block')} s{c.get('kv_splits')} n{c.get('block_n')} w{c.get('num_warps')} mb{c.get('min_blocks')}\")"
python3 bench/merge_db.py --replace kgen/tuned/tuning.json kgen/tuned/tuning.json "$out/ao/retuned.json" > /dev/null
cp kgen/tuned/tuning.json "$out/tuning.json"
timeout 210 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs > "$out/ao/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/ao/gpu-tests.log")"; grep -E "^(FAILED|ERROR)" "$out/ao/gpu-tests.log" | head
tar czf "$out/run-ao.tar.gz" -C "$out" ao && rm -rf "$out/ao"
