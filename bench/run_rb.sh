#!/usr/bin/env bash
# On the device (thirty-second session, branch row-stores, after run_ra.sh's re-tune is in
# kgen/tuned/tuning.json): the branch against main before it (abref/: an untracked copy of
# 26a3986's kgen, templates, time_shipped.py, grid and pyproject, with its own database), every
# 16-bit shipped case, dense and sparse, oracle-checked, alternating trees; then compute-sanitizer
# (memcheck, racecheck, synccheck) on the dense and sparse samples; a second A/B round if time is
# left. Make abref/ first: mkdir abref && git archive 26a3986 kgen templates
# bench/time_shipped.py bench/grid.json pyproject.toml | tar -x -C abref
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/rows"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases=$(python3 -c "import json; print(' '.join(sorted(e['case'] for e in json.load(open('kgen/tuned/tuning.json'))['entries'].values() if 'case' in e and e['config'].get('compute') != 'tiled')))")
ab_round() {
  for tree in abref .; do
    label=$([ "$tree" = . ] && echo tree || echo abref)
    (cd "$tree" && PYTHONPATH=. timeout "$2" python3 bench/time_shipped.py --reps 20 $cases \
      > "$out/rows/$label-$1.jsonl" 2> "$out/rows/$label-$1.err")
    echo "$label round $1 exit $? at ${SECONDS}s"
  done
}
ab_round 1 150
bash bench/sanitize.sh 30 > "$out/sanitize.txt" 2>&1; tail -3 "$out/sanitize.txt"; echo "at ${SECONDS}s"
bash bench/sanitize.sh 20 tests/sanitize_sparse_sample.py sanitize-sparse > "$out/sanitize-sparse.txt" 2>&1
tail -3 "$out/sanitize-sparse.txt"; echo "at ${SECONDS}s"
[ $SECONDS -lt 470 ] && ab_round 2 $(( (580 - SECONDS) / 2 ))
python3 bench/ab_table.py "$out/rows"
grep -h "Traceback" "$out"/rows/*.err | head -3
