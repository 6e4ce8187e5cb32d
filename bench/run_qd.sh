#!/usr/bin/env bash
# On the device (thirty-first session, call 4), after q's fragment loads and the output stores take
# one address a row (templates/mla/mma/attention.cuh load_q / write_row, mla_sparse/attention.cuh):
# every 16-bit shipped entry re-tuned with its config pinned (bench/retune_shipped.py: splits
# re-chosen, new code stamps) into kgen/tuned/tuning.json (brought back as $OUT/tuning.json);
# compute-sanitizer (memcheck, racecheck, synccheck) on the dense and sparse samples. (The GPU suite
# runs in the next call, on the tree with this database: run_qe.sh.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases=$(python3 -c "import json; print(' '.join(sorted(e['case'] for e in json.load(open('kgen/tuned/tuning.json'))['entries'].values() if 'case' in e and e['config'].get('compute') != 'tiled')))")
cp kgen/tuned/tuning.json "$out/tuning-before.json"
timeout 300 python3 bench/retune_shipped.py --reps 10 --out "$out/retune" --db kgen/tuned/tuning.json $cases > "$out/retune.jsonl" 2> "$out/retune.err"
echo "retune exit $?"; tail -2 "$out/retune.err" | cut -c1-300
cp kgen/tuned/tuning.json "$out/tuning.json"
python3 - "$out/retune.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line); c = r.get("best") or {}
        print(f"{r['case']:26s} {r['us']:7.1f} s{c.get('kv_splits')}")
PY
tar czf "$out/retune.tar.gz" -C "$out" retune && rm -rf "$out/retune"
bash bench/sanitize.sh 40 > "$out/sanitize.txt" 2>&1; tail -4 "$out/sanitize.txt"
bash bench/sanitize.sh 25 tests/sanitize_sparse_sample.py sanitize-sparse > "$out/sanitize-sparse.txt" 2>&1
tail -4 "$out/sanitize-sparse.txt"
