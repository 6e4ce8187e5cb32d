#!/usr/bin/env bash
# On the device (fifteenth session): blocks whose warps hold two m16 tiles of rows (WARP_M = 2:
# every K and V fragment feeds two MMAs), never timed before, against the shipped configs
# (bench/wm2_cases.txt); the device's resources for each; ncu of the best candidate.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
mapfile -t cases < bench/wm2_cases.txt
PYTHONPATH=. timeout 150 python3 bench/sass_dump.py "$out/sass" "${cases[@]}" > "$out/resources.txt" 2>&1
PYTHONPATH=. timeout 300 python3 bench/time_shipped.py --reps 10 "${cases[@]}" > "$out/times.jsonl" 2> "$out/times.err"
tar czf "$out/sass.tar.gz" -C "$out" sass && rm -rf "$out/sass"
paste -d' ' <(grep -v '^#' "$out/resources.txt" | head -40) /dev/null | cut -c1-160
python3 - "$out/times.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['case'][:80]:80s} {r['config']:40s} {r['status']:6s} {r['median_us'] or 0:8.1f}")
PY
tail -3 "$out/times.err"
