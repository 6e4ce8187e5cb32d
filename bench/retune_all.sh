#!/usr/bin/env bash
# On the device, after a kernel change that makes shipped entries stale: the CASEs (default:
# every 16-bit shipped entry) re-tuned with their configs pinned (bench/retune_shipped.py: splits
# re-chosen, new code stamps) into kgen/tuned/tuning.json, within SECONDS; the database before and
# after in $OUT (tuning-before.json, tuning.json), the sweeps' output in $OUT/retune.{jsonl,err},
# and on stdout each re-stamped entry's time and split count before and after.
#   bash bench/retune_all.sh SECONDS [CASE ...]
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=${KGEN_CACHE_DIR:-/tmp/kgen-cache}
seconds=$1; shift
cases=${*:-$(python3 -c "import json; print(' '.join(sorted(e['case'] for e in json.load(open('kgen/tuned/tuning.json'))['entries'].values() if 'case' in e and e['config'].get('compute') != 'tiled')))")}
cp kgen/tuned/tuning.json "$out/tuning-before.json"
timeout "$seconds" python3 bench/retune_shipped.py --reps 10 --out "$out/retune" --db kgen/tuned/tuning.json $cases \
  > "$out/retune.jsonl" 2> "$out/retune.err"
echo "retune exit $? at ${SECONDS}s"; grep -v "it/s\|kernel/s\|variant/s" "$out/retune.err" | tail -3 | cut -c1-300
cp kgen/tuned/tuning.json "$out/tuning.json"; rm -rf "$out/retune"
python3 - "$out/tuning-before.json" kgen/tuned/tuning.json <<'PY'
import json, sys
before, after = (json.load(open(p))["entries"] for p in sys.argv[1:])
for key, e in sorted(after.items(), key=lambda kv: kv[1].get("case", "")):
    b = before.get(key, {})
    if "case" in e and b.get("code") != e.get("code"):
        splits = f"s{b.get('config', {}).get('kv_splits')} -> s{e['config'].get('kv_splits')}"
        print(f"{e['case']:26s} {b.get('median_us', 0):7.1f} -> {e['median_us']:7.1f}  {splits}")
PY
