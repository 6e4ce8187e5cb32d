#!/usr/bin/env bash
# On the device (eighteenth session): the tiled float32 path landed: compute-sanitizer on its
# sample variants; seed-fp32-verify swept on the tiled path (tuning DB entry); the heuristic
# default timed; the whole GPU suite.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/sanitize.sh 90 tiled
timeout 200 python3 -m kgen sweep --grid kgen/tune/grid.json --case seed-fp32-verify --compute tiled \
  --heads-per-block 8 4 --reps 10 --db "$out/tiled-db.json" --out "$out/sweep" > "$out/sweep.log" 2>&1
echo "sweep exit $?"; tail -4 "$out/sweep.log"
timeout 100 python3 bench/time_shipped.py --reps 10 --default seed-fp32-verify > "$out/default.jsonl" 2>> "$out/default.err"
cat "$out/default.jsonl"
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
tar czf "$out/sweep.tgz" -C "$out" sweep && rm -rf "$out/sweep"
md5sum templates/mla/fma/tiled.cuh templates/mla/tiled.cu.jinja kgen/mla/tiled_layout.py kgen/mla/heuristic.py
