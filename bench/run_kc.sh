#!/usr/bin/env bash
# On the device (twenty-sixth session, call 3), branch hg-major (the head group as blockIdx.x):
# every shipped entry re-tuned with its config pinned (bench/retune_shipped.py: the split count
# re-chosen, the entry re-recorded with the new code stamp) into $OUT/tuning.json; then the
# shipped configs timed from main's tree (mainref/, an untracked copy) and this one, one round.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases=$(python3 -c "import json; print(' '.join(sorted(e['case'] for e in json.load(open('kgen/tuned/tuning.json'))['entries'].values() if 'case' in e)))")
cp kgen/tuned/tuning.json "$out/tuning.json"
timeout 330 python3 bench/retune_shipped.py --out "$out/retune" --db "$out/tuning.json" $cases > "$out/retune.jsonl" 2> "$out/retune.err"
echo "retune exit $?"; tail -3 "$out/retune.err"
tar czf "$out/retune.tar.gz" -C "$out" retune && rm -rf "$out/retune"
bash bench/ab.sh hg 1 20 mainref . -- $cases
