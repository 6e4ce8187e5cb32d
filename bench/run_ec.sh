#!/usr/bin/env bash
# On the device (twentieth session, final tree): the MIO micro-benchmark with the mma chains
# independent of the loads; dsv3-tp8-decode-batch re-swept over its specialised decode
# neighbourhood (splits from the sweep's candidates; the winner replaces the shipped entry); the
# whole GPU suite on that tree and database.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
python3 bench/micro_mio.py > "$out/micro_mio.txt" 2>&1; cat "$out/micro_mio.txt"
timeout 200 python3 -m kgen sweep --grid kgen/tune/grid.json --case dsv3-tp8-decode-batch --compute mma \
  --heads-per-block 16 --num-warps 8 --col-groups 4 --min-blocks 0 1 --qk-ahead 0 --split-softmax 1 \
  --swap-rows 0 --specialize 1 --pdl-combine 1 --mma-tiles 3x16 4x16 5x16 --reps 20 \
  --db "$out/d8-db.json" --out /tmp/sweep > "$out/sweep.log" 2>&1
echo "sweep exit $?"; grep -A4 "^case" "$out/sweep.log"; rm -f "$out"/*.lock
python3 bench/merge_db.py --replace kgen/tuned/tuning.json kgen/tuned/tuning.json "$out/d8-db.json" | grep -i "b64_l8192" 
cp kgen/tuned/tuning.json "$out/"
python3 -m kgen tune ls 2>&1 | grep -A1 "b64_l8192"
bash bench/gpu_suite.sh 330 "$out/gpu-tests.log"
md5sum kgen/tuned/tuning.json kgen/mla/runner.py
