#!/usr/bin/env bash
# On the device (thirty-second session, branch row-stores): the q loads / output stores from one
# address a row make every 16-bit shipped entry stale. Each is re-tuned with its config pinned
# (splits re-chosen, new code stamps) into kgen/tuned/tuning.json (brought back as
# $OUT/tuning.json); then the GPU suite on that tree and database, in what is left of 590 s.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
python3 -c "from kgen.compiler import nvrtc_version, headers_version; print('nvrtc', nvrtc_version(), 'headers', headers_version())"
cases=$(python3 -c "import json; print(' '.join(sorted(e['case'] for e in json.load(open('kgen/tuned/tuning.json'))['entries'].values() if 'case' in e and e['config'].get('compute') != 'tiled')))")
cp kgen/tuned/tuning.json "$out/tuning-before.json"
timeout 330 python3 bench/retune_shipped.py --reps 10 --out "$out/retune" --db kgen/tuned/tuning.json $cases > "$out/retune.jsonl" 2> "$out/retune.err"
echo "retune exit $? at ${SECONDS}s"; grep -v "it/s\|kernel/s\|variant/s" "$out/retune.err" | tail -3 | cut -c1-300
cp kgen/tuned/tuning.json "$out/tuning.json"
python3 - "$out/retune.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line); c = r.get("best") or {}
        print(f"{r['case']:26s} {r['us'] or 0:7.1f} s{c.get('kv_splits')}")
PY
rm -rf "$out/retune"
bash bench/gpu_suite.sh $((585 - SECONDS)) "$out/gpu-tests.log"
