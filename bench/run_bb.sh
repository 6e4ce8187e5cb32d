#!/usr/bin/env bash
# Twelfth session, device call bb: 4-warp one-tile blocks at four per SM (two 16-position stages,
# min_blocks 4: 128 registers, 16 warps per SM on the H200) against the shipped three-per-SM
# configs, as time_shipped.py overrides (bench/occupancy_cases.txt), two rounds; then the whole
# GPU suite on main (the default-refit heuristic).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache PYTHONPATH=.
mapfile -t cases < <(grep -v '^#' bench/occupancy_cases.txt)
for round in 1 2; do
  timeout 200 python3 bench/time_shipped.py --reps 10 "${cases[@]}" > "$out/occ-$round.jsonl" 2> "$out/occ-$round.err"
  echo "round $round exit $?"
done
python3 - "$out" <<'PY'
import json, sys
rows = {}
for r in (1, 2):
    for line in open(f"{sys.argv[1]}/occ-{r}.jsonl"):
        if line.startswith("{"):
            d = json.loads(line); rows.setdefault(d["case"], []).append(d)
for name, ds in rows.items():
    times = " ".join(f"{d['median_us']:.1f}" if d["median_us"] else d["status"] for d in ds)
    print(f"{name:68s} {times}  err {ds[0]['error']}")
PY
bash bench/gpu_suite.sh 420 "$out/gpu-tests.log"
