#!/usr/bin/env bash
# On the device (twentieth session): the sparse heuristic default with and without the PDL merge
# (its shipped H200 entries take it in 8 of 10 cases; the default never did), on the H200's own
# default (no carveout) and on sm_120's default at sm_120's occupancy (bench/sm120_like.py).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
V=""
for c in dsv32-sparse-h16-b1 dsv32-sparse-h16-b32 dsv32-sparse-h16-b128 dsv32-sparse-h16-verify \
         dsv32-sparse-h64-b1 dsv32-sparse-h64-b32 dsv32-sparse-h64-b128 dsv32-sparse-h128-b1 \
         dsv32-sparse-h128-b32 dsv32-sparse-h128-b128; do
  V="$V $c $c:pdl_combine=1"
done
timeout 270 python3 bench/sm120_like.py --reps 20 --percent 0 --default-arch sm_90 $V \
  > "$out/sparse_sm90.jsonl" 2> "$out/sparse_sm90.err"; echo "sm_90 exit $?"
timeout 270 python3 bench/sm120_like.py --reps 20 --percent 43 --default-arch sm_120 $V \
  > "$out/sparse_sm120.jsonl" 2> "$out/sparse_sm120.err"; echo "sm_120 exit $?"
python3 - "$out"/sparse_sm90.jsonl "$out"/sparse_sm120.jsonl <<'PY'
import json, sys
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        if "case" in r:
            us = r.get("median_us")
            print(f"{r['default_arch']} {r['case'][:40]:40s} {r['config']:40s} s{r['splits']:<3} {r['status']} {us if us is None else round(us, 2)}")
PY
