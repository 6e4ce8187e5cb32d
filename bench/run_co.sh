#!/usr/bin/env bash
# On the device (seventeenth session): compute-sanitizer on the sparse sample, now with two PDL
# merge variants; the heuristic default (config='auto' without a tuned entry) timed with the fused
# merge and with pdl_combine = 1 on every 16-bit dense case; the two H = 8 decode entries re-tuned
# with specialize open. Logs in $OUT/co.tgz.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"; w=/tmp/co; mkdir -p $w
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
OUT=$w bash bench/sanitize.sh 100 tests/sanitize_sparse_sample.py sparse
cases="kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-long
  dsv3-tp8-decode-wide kimi-tp1-decode kimi-tp1-decode-64k kimi-tp1-batch dsv3-tp1-batch
  kimi-tp8-verify-tree kimi-tp8-verify-batch kimi-tp1-verify-tree page1-decode"
runs=(); for c in $cases; do runs+=("$c" "$c:pdl_combine=1"); done
timeout 240 python3 bench/time_shipped.py --reps 10 --default "${runs[@]}" > $w/default-pdl.jsonl 2> $w/default-pdl.err
python3 - $w/default-pdl.jsonl <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line); print(f"{r['case'][:36]:36s} {r['config']:40s} {r['status']} {r['median_us'] or 0:.1f}")
PY
bash bench/retune.sh 150 $w/rt --open specialize=0,1 --open swap_rows=0,1 --open split_softmax=0,1 \
  --open num_warps=4,8 --open qk_ahead=0,1 kimi-tp8-decode-batch kimi-tp8-decode-long
cp kgen/tuned/tuning.json $w/
tar czf "$out/co.tgz" -C /tmp co
