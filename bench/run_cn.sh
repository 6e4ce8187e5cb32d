#!/usr/bin/env bash
# On the device (seventeenth session): specialize's q role waits for tile i + 1 after hand-off i
# (its own barrier), not before it, so P.V of tile i no longer waits for the next tile's copies.
# memcheck, synccheck, racecheck of the specialised sample; the shipped specialised entries timed
# with this kernel and with the one before (bench/probe_specialized_v1.cuh, untracked: cm/'s kernel, `git show 0c0a182:templates/mla/mma/specialized.cuh`);
# then the memory-bound decode entries re-tuned with this kernel (as in cm/).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1
spec=templates/mla/mma/specialized.cuh
for tool in memcheck synccheck racecheck; do
  KGEN_CACHE_DIR=/tmp/kgen-v2 timeout 100 compute-sanitizer --tool $tool --report-api-errors no python3 tests/sanitize_sample.py _ws > "$out/$tool-ws.log" 2>&1
  echo "$tool ws: $(grep -c '^ok' $out/$tool-ws.log) ok; $(tail -1 $out/$tool-ws.log)"
done
cases="dsv3-tp8-decode-batch dsv3-tp8-decode-wide page1-decode kimi-tp1-decode dsv3-tp8-decode-long"
table() {
  python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line); print(f"{sys.argv[1].rsplit('/', 1)[-1][:8]} {r['case'][:28]:28s} {r['config']:38s} {r['status']} {r['median_us'] or 0:.1f}")
PY
}
for round in 1 2; do
  KGEN_CACHE_DIR=/tmp/kgen-v2 timeout 100 python3 bench/time_shipped.py --reps 10 $cases > "$out/v2-$round.jsonl" 2> "$out/v2-$round.err"
  cp $spec /tmp/v2.cuh; cp bench/probe_specialized_v1.cuh $spec
  KGEN_CACHE_DIR=/tmp/kgen-v1 timeout 100 python3 bench/time_shipped.py --reps 10 $cases > "$out/v1-$round.jsonl" 2> "$out/v1-$round.err"
  cp /tmp/v2.cuh $spec
  table "$out/v2-$round.jsonl"; table "$out/v1-$round.jsonl"
done
KGEN_CACHE_DIR=/tmp/kgen-v2 bash bench/retune.sh 200 /tmp/cn --open specialize=0,1 --open num_warps=4,8 --open qk_ahead=0,1 $cases
cp /tmp/cn/retuned.json /tmp/cn/retune.log kgen/tuned/tuning.json "$out/"
