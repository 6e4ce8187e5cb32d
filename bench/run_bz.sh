#!/usr/bin/env bash
# On the device (fifteenth session): the split-KV merge as a kernel of its own with PDL
# (Config.pdl_combine) against the fused merge on every 16-bit dense case (bench/pdl_cases.txt,
# oracle-checked, device resources); then the GPU tests that draw it, and the sanitizer on the
# sample's pdl_combine variants.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
mapfile -t cases < bench/pdl_cases.txt
PYTHONPATH=. timeout 120 python3 bench/sass_dump.py "$out/sass" "${cases[@]}" > "$out/resources.txt" 2>&1
rm -rf "$out/sass"
PYTHONPATH=. timeout 200 python3 bench/time_shipped.py --reps 10 "${cases[@]}" > "$out/times.jsonl" 2> "$out/times.err"
bash bench/gpu_suite.sh 200 "$out/gpu-new.log" tests/test_runner_gpu.py tests/test_mla_gpu.py
bash bench/sanitize.sh 60 _pc
python3 - "$out/times.jsonl" "$out/resources.txt" <<'PY'
import json, re, sys
regs = {}
for line in open(sys.argv[2]):
    m = re.match(r"(\S+): .*?(\d+) regs.*?(\d+) B spills, (\d+) warps/SM", line)
    if m: regs[m.group(1)] = f"{m.group(2)}r sp{m.group(3)} {m.group(4)}w"
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"{r['case'][:48]:48s} {regs.get(r['case'], ''):16s} {r['status']:6s} {r['median_us'] or 0:8.1f}")
PY
tail -2 "$out/times.err"
