#!/usr/bin/env bash
# On the device (nineteenth session, final tree): the tiled path with its split-KV merge as a
# kernel of its own (pdl_combine; the fused merge costs seed-fp32-verify 20 us at 33 splits,
# de/ko2.txt): the case swept over both merges, the winner merged into kgen/tuned/tuning.json
# (copied to $OUT); the whole GPU suite on that tree; compute-sanitizer on the tiled sample
# (now with a PDL variant).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 150 python3 -m kgen sweep --grid kgen/tune/grid.json --case seed-fp32-verify --compute tiled \
  --heads-per-block 8 --pdl-combine 0 1 --reps 10 --db "$out/tiled-db.json" --out /tmp/sweep > "$out/sweep.log" 2>&1
echo "sweep exit $?"; grep -A4 "^case" "$out/sweep.log"; rm -f "$out"/*.lock
python3 bench/merge_db.py kgen/tuned/tuning.json kgen/tuned/tuning.json "$out/tiled-db.json" && cp kgen/tuned/tuning.json "$out/"
python3 -m kgen tune ls 2>&1 | grep -A1 "f32_h64" | tail -2
bash bench/gpu_suite.sh 320 "$out/gpu-tests.log"
bash bench/sanitize.sh 100 tiled 2>&1 | tail -6
md5sum kgen/tuned/tuning.json templates/mla/fma/tiled.cuh templates/mla/tiled.cu.jinja
