#!/usr/bin/env bash
# On the device (seventeenth session): is specialize's racecheck report about the roles' barrier
# counts? racecheck of the five specialised sample variants (1) as the tree has them, with the q
# role's mirror barrier (as many barriers per tile as the v role), (2) without it (the sixteenth
# session's kernel: the control), (3) without it and with synchronous tile copies in place of
# cp.async; then (1) timed against the shipped configs on the cases it helped.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1
spec=templates/mla/mma/specialized.cuh vec=templates/common/vec.cuh
cp $spec /tmp/spec.cuh; cp $vec /tmp/vec.cuh
rc() {
  KGEN_CACHE_DIR=/tmp/kgen-$1 timeout 170 compute-sanitizer --tool racecheck --report-api-errors no \
    python3 tests/sanitize_sample.py _ws > "$out/rc-$1.log" 2>&1
  echo "racecheck $1: $(grep -c '^ok' $out/rc-$1.log) ok; $(tail -1 $out/rc-$1.log)"
}
unmirror() {
  python3 - <<'PY'
p = "templates/mla/mma/specialized.cuh"
s = open(p).read()
block = "      if (q_role_sync_or(found)) {\n        q_role_sync();\n        q_role_sync();\n      }\n"
assert block in s
open(p, "w").write(s.replace(block, ""))
PY
}
sync_copies() {
  python3 - <<'PY'
p = "templates/common/vec.cuh"
s = open(p).read()
head = "  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));\n"
assert head in s
sync = ("  if constexpr (BYTES == 16) {\n    *reinterpret_cast<uint4*>(smem) = zero ? make_uint4(0u, 0u, 0u, 0u)"
        " : *reinterpret_cast<const uint4*>(gmem);\n    return;\n  }\n")
open(p, "w").write(s.replace(head, sync + head, 1))
PY
}
rc mirror
unmirror; rc control
sync_copies; rc synccopy
cp /tmp/spec.cuh $spec; cp /tmp/vec.cuh $vec
WS=specialize=1,num_warps=8,col_groups=4,qk_ahead=0,split_softmax=1,swap_rows=0,smem_stages=4,min_blocks=0
runs=()
for c in kimi-tp1-decode dsv3-tp8-decode-batch dsv3-tp8-decode-wide page1-decode kimi-tp8-decode-batch; do runs+=("$c" "$c:$WS"); done
KGEN_CACHE_DIR=/tmp/kgen-mirror timeout 200 python3 bench/time_shipped.py --reps 10 "${runs[@]}" > "$out/ws-mirror.jsonl" 2> "$out/ws-mirror.err"
python3 - "$out/ws-mirror.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line); print(f"{r['case'][:40]:40s} {r['config']:40s} {r['status']} {r['median_us'] or 0:.1f}")
PY
