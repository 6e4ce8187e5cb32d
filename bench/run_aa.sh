#!/usr/bin/env bash
# Eighth session: the sparse family after the float16 dequant shortcut and the one-wave split
# candidates. Sparse GPU tests; a sweep of all ten sparse grid cases (register dequant, the only
# placement that has won), merged into the shipped database ($OUT/tuning.json: copy it to
# kgen/tuned/); compute-sanitizer x3 on the sparse sample. Everything else in $OUT/run-aa.tar.gz.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/aa"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 150 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs tests/test_sparse_gpu.py \
  tests/test_sparse_tune_gpu.py > "$out/aa/sparse-gpu-tests.log" 2>&1
echo "sparse gpu tests exit $?: $(tail -1 "$out/aa/sparse-gpu-tests.log")"; grep -E "^(FAILED|ERROR)" "$out/aa/sparse-gpu-tests.log" | head
timeout 270 python3 bench/sweep.py --family sparse --out "$out/aa/sweep" --db "$out/aa/tuning-sparse.json" \
  --num-warps 4 8 --col-groups 4 --dequant registers --register-tiles 16 32 --gather-bytes 16 \
  --min-blocks 0 1 --reps 10 --seconds 240 > "$out/aa/sweep.log" 2>&1
echo "sparse sweep exit $?"
grep -E "WRONG|wrong|Traceback" "$out/aa/sweep.log" | head -5
grep -E "^\S+ +(best|default) " "$out/aa/sweep.log"
python3 bench/merge_db.py kgen/tuned/tuning.json kgen/tuned/tuning.json "$out/aa/tuning-sparse.json" > "$out/aa/merge.log" 2>&1
cp kgen/tuned/tuning.json "$out/tuning.json"
timeout 30 python3 bench/sparse_table.py "$out/aa/sweep" > "$out/aa/sparse-table.txt" 2>&1; cat "$out/aa/sparse-table.txt"
OUT="$out/aa" bash bench/sanitize.sh 35 tests/sanitize_sparse_sample.py sanitize-sparse > "$out/aa/sanitize.txt" 2>&1
cat "$out/aa/sanitize.txt"
tar czf "$out/run-aa.tar.gz" -C "$out" aa && rm -rf "$out/aa"
