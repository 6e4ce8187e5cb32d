#!/usr/bin/env bash
# On the device machine (third session, the last call): compute-sanitizer on the sample's
# multi-split tensor-core variants (the combine's pieces changed after the full sample ran), the
# tensor-core sweep of the grid, the float32 FMA case's sweep, then the runner / launch GPU tests
# (graph replays: the combine's counters must be zero after every launch). Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cat > /tmp/subset.py <<'PY'
import sys; sys.path.insert(0, '.')
import tests.sanitize_sample as s
s.SAMPLE = [(sp, c) for sp, c in s.SAMPLE if c.kv_splits >= 3]
if 'compile' in sys.argv:
    from kgen.arch import resolve_arch
    from kgen.tune.sweep import compile_space
    compile_space(s.SAMPLE, resolve_arch('native').name)
else:
    s.main()
PY
python3 /tmp/subset.py compile > "$out/precompile.log" 2>&1
for tool in memcheck racecheck; do
  timeout 45 compute-sanitizer --tool "$tool" --report-api-errors no python3 /tmp/subset.py \
    > "$out/sanitize-$tool.log" 2>&1
  echo "$tool exit $?: $(grep -c '^ok' "$out/sanitize-$tool.log") variants ok; $(tail -1 "$out/sanitize-$tool.log")"
done
timeout 255 python3 bench/sweep.py --out "$out/sweep" --db "$out/tuning.json" --compute mma \
  --num-warps 4 8 --col-groups 4 8 --mma-tiles 3x16 4x16 2x32 --min-blocks 0 1 --qk-ahead 0 1 \
  --reps 10 > "$out/sweep.log" 2>&1
echo "sweep exit $?"
timeout 50 python3 bench/sweep.py --case seed-fp32-verify --compute fma --num-warps 8 \
  --heads-per-block 2 4 8 --out "$out/sweep32" --db "$out/tuning.json" --reps 5 > "$out/sweep32.log" 2>&1
echo "fp32 sweep exit $?"
timeout "${1:-85}" python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider tests/test_runner_gpu.py \
  tests/test_launch_gpu.py tests/test_tune_gpu.py -rfEs > "$out/gpu-runner.log" 2>&1
echo "runner/launch/tune gpu tests exit $?: $(tail -1 "$out/gpu-runner.log")"; grep -E "^FAILED|^ERROR" "$out/gpu-runner.log" | head
grep -v "it/s\]\|s/it\]\|kernel/s\]\|variant/s\]" "$out/sweep.log" | grep -E " best |wrong|failed|rror" | head -30
grep -E " best |wrong|failed|rror" "$out/sweep32.log" | head -5
