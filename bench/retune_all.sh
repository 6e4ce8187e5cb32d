#!/usr/bin/env bash
# On the device, after a kernel change that makes the shipped entries stale: every 16-bit shipped
# entry re-tuned with its config pinned (bench/retune_shipped.py: splits re-chosen, new code
# stamps) into kgen/tuned/tuning.json, within SECONDS; the database before and after in $OUT
# (tuning-before.json, tuning.json), the sweeps' output in $OUT/retune.{jsonl,err}, and a table of
# the winners (case, us, splits) on stdout.
#   bash bench/retune_all.sh SECONDS
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=${KGEN_CACHE_DIR:-/tmp/kgen-cache}
cases=$(python3 -c "import json; print(' '.join(sorted(e['case'] for e in json.load(open('kgen/tuned/tuning.json'))['entries'].values() if 'case' in e and e['config'].get('compute') != 'tiled')))")
cp kgen/tuned/tuning.json "$out/tuning-before.json"
timeout "$1" python3 bench/retune_shipped.py --reps 10 --out "$out/retune" --db kgen/tuned/tuning.json $cases > "$out/retune.jsonl" 2> "$out/retune.err"
echo "retune exit $?"; grep -v "it/s\|kernel/s\|variant/s" "$out/retune.err" | tail -3 | cut -c1-300
cp kgen/tuned/tuning.json "$out/tuning.json"
python3 - "$out/retune.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line); c = r.get("best") or {}
        print(f"{r['case']:26s} {r['us'] or 0:7.1f} s{c.get('kv_splits')}")
PY
rm -rf "$out/retune"
