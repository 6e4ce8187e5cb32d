set -uo pipefail
out=${OUT:-gpu-out}
export PYTHONUNBUFFERED=1
(cd split-run && PYTHONPATH=. KGEN_CACHE_DIR=/tmp/kgen-cache-sq timeout 110 python3 bench/sweep.py --out "$out/sq" --db "$out/splitq-tuning.json" --compute mma \
  --case dsv3-tp1-batch --case kimi-tp1-batch --case kimi-tp1-decode-64k --case kimi-tp1-verify-tree --num-warps 8 16 --col-groups 4 --mma-tiles 3x16 2x32 --min-blocks 0 1 --qk-ahead 0 \
  --split-softmax 1 --reps 10 > "$out/splitq-sweep.log" 2>&1; echo "splitq exit $?")
grep -E "^\S+ +(best|default) " "$out/splitq-sweep.log"
(cd wt8-run && PYTHONPATH=. KGEN_CACHE_DIR=/tmp/kgen-cache8 timeout 175 python3 bench/sweep.py --family sparse --out "$out/sparse-sweep" \
  --db "$out/sparse-tuning.json" --num-warps 4 8 --col-groups 4 8 --sparse-tiles 2x16 3x16 2x32 --register-tiles 16 32 --gather-bytes 16 \
  --min-blocks 0 1 --reps 10 --seconds 150 > "$out/sparse-sweep.log" 2>&1; echo "sparse sweep exit $?"
 timeout 20 python3 bench/sparse_table.py "$out/sparse-sweep" > "$out/sparse-table.txt" 2>&1; cat "$out/sparse-table.txt")
