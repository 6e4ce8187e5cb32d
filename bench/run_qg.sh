#!/usr/bin/env bash
# On the device (thirty-first session, branch row-stores), after a kernel change that makes the
# shipped entries stale: every 16-bit shipped entry re-tuned with its config pinned (splits
# re-chosen, new code stamps) into kgen/tuned/tuning.json (brought back as $OUT/tuning.json), then
# the GPU suite on that tree and database.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases=$(python3 -c "import json; print(' '.join(sorted(e['case'] for e in json.load(open('kgen/tuned/tuning.json'))['entries'].values() if 'case' in e and e['config'].get('compute') != 'tiled')))")
cp kgen/tuned/tuning.json "$out/tuning-before.json"
timeout 310 python3 bench/retune_shipped.py --reps 10 --out "$out/retune" --db kgen/tuned/tuning.json $cases > "$out/retune.jsonl" 2> "$out/retune.err"
echo "retune exit $?"; tail -2 "$out/retune.err" | cut -c1-300
cp kgen/tuned/tuning.json "$out/tuning.json"
python3 - "$out/retune.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line); c = r.get("best") or {}
        print(f"{r['case']:26s} {r['us'] or 0:7.1f} s{c.get('kv_splits')}")
PY
rm -rf "$out/retune"
bash bench/gpu_suite.sh 255 "$out/gpu-tests.log"
