#!/usr/bin/env bash
# On the device (thirty-first session), on branch row-stores: its epilogue / sparse-q change against the tree
# before it (abref/: an untracked copy of HEAD~1's kgen, templates and time_shipped.py, with its own
# database), the shipped configs of every 16-bit grid case, dense and sparse, two rounds,
# oracle-checked; then compute-sanitizer (memcheck, racecheck, synccheck) on the dense and sparse
# samples with the new code. Make abref/ first, on the branch: mkdir abref && git archive 8d92091 kgen
# templates bench/time_shipped.py bench/grid.json pyproject.toml | tar -x -C abref
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases=$(python3 -c "import json; print(' '.join(sorted(e['case'] for e in json.load(open('kgen/tuned/tuning.json'))['entries'].values() if 'case' in e and e['config'].get('compute') != 'tiled')))")
bash bench/ab.sh rows 2 20 abref . -- $cases
bash bench/sanitize.sh 40 > "$out/sanitize.txt" 2>&1; tail -3 "$out/sanitize.txt"
bash bench/sanitize.sh 25 tests/sanitize_sparse_sample.py sanitize-sparse > "$out/sanitize-sparse.txt" 2>&1
tail -3 "$out/sanitize-sparse.txt"
