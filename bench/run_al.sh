#!/usr/bin/env bash
# Ninth session, last device call: both tensor-core families share one online softmax
# (templates/mla/mma/online_softmax.cuh; the dense SASS is unchanged, the sparse SASS not). The ten
# sparse entries re-tuned and written over the shipped database ($OUT/tuning.json: copy it to
# kgen/tuned/); the sparse GPU tests with it.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/al"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 200 python3 bench/retune_shipped.py --out "$out/al/retune" --db "$out/al/retuned.json" --reps 10 --family sparse \
  > "$out/al/retune.log" 2>&1
echo "retune exit $?"; grep '^{' "$out/al/retune.log" | python3 -c "
import json, sys
for line in sys.stdin:
    r = json.loads(line); c = r['best'] or {}
    print(f\"{r['case']:26s} {r['us']:.1f} hb{c.get('heads_per_block')} s{c.get('kv_splits')} n{c.get('block_n')} w{c.get('num_warps')} mb{c.get('min_blocks')}\")"
python3 bench/merge_db.py --replace kgen/tuned/tuning.json kgen/tuned/tuning.json "$out/al/retuned.json" > /dev/null
cp kgen/tuned/tuning.json "$out/tuning.json"
timeout 150 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs tests/test_sparse_gpu.py \
  tests/test_sparse_tune_gpu.py tests/test_tune_gpu.py > "$out/al/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/al/gpu-tests.log")"; grep -E "^(FAILED|ERROR)" "$out/al/gpu-tests.log" | head
tar czf "$out/run-al.tar.gz" -C "$out" al && rm -rf "$out/al"
