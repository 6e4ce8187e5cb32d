#!/usr/bin/env bash
# On the device machine (fifth session), from a copy of this branch: the sparse GPU tests, then
# an A/B sweep of three sparse cases after the k-step dealing change. Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache8
timeout 120 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs tests/test_sparse_gpu.py > "$out/sparse-gpu-tests.log" 2>&1
echo "sparse gpu tests exit $?: $(tail -1 "$out/sparse-gpu-tests.log")"
grep -E "^(FAILED|ERROR)" "$out/sparse-gpu-tests.log" | head -5
timeout 60 python3 bench/sweep.py --family sparse --out "$out/ab" --db "$out/ab-tuning.json" \
  --case dsv32-sparse-h16-b32 --case dsv32-sparse-h16-b128 --case dsv32-sparse-h64-b32 \
  --num-warps 4 8 --col-groups 4 --register-tiles 16 32 --sparse-tiles 2x16 --gather-bytes 16 --min-blocks 0 --reps 10 > "$out/ab.log" 2>&1
echo "ab exit $?"
python3 bench/sparse_table.py "$out/ab" 2>&1 | head -8
