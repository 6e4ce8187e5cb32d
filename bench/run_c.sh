#!/usr/bin/env bash
# On the device machine (third session): per-block phase traces of the shipped configs with the
# distributed fused combine, compute-sanitizer on tests/sanitize_sample.py, then the tensor-core
# GPU tests. Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 120 python3 bench/trace.py --compile > "$out/trace-compile.log" 2>&1 &
python3 -c "
import sys; sys.path.insert(0, '.')
from kgen.arch import resolve_arch
from kgen.tune.sweep import compile_space
from tests.sanitize_sample import SAMPLE
compile_space(SAMPLE, resolve_arch('native').name)" > "$out/precompile.log" 2>&1
wait
timeout 100 python3 bench/trace.py > "$out/trace.txt" 2>&1
echo "trace exit $?"
bash bench/sanitize.sh "${1:-80}"
timeout "${2:-170}" python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider tests/test_mla_gpu.py \
  tests/test_mla_seed_gpu.py tests/test_runner_gpu.py -x -rfEs > "$out/gpu-mla.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/gpu-mla.log")"; grep -E "FAILED|Error" "$out/gpu-mla.log" | head -10
cat "$out/trace.txt"
