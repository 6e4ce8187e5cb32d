#!/usr/bin/env bash
# On the device (thirty-third session, branch item-rows2: the split softmax's items dealt to
# lanes by rows 0, 2, 1, 3 at 16-position tiles with one row group): the 16 entries whose SASS it
# moves re-tuned with their configs pinned (the database comes back as $OUT/tuning.json), then
# the GPU suite on that tree and database in what is left of 575 s.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases="dsv3-tp1-batch dsv3-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-wide
dsv32-sparse-h128-b128 dsv32-sparse-h16-b1 dsv32-sparse-h64-b128 kimi-tp1-batch kimi-tp1-decode
kimi-tp1-decode-64k kimi-tp1-verify-tree kimi-tp8-decode-batch kimi-tp8-decode-long
kimi-tp8-verify-batch kimi-tp8-verify-tree page1-decode"
cp kgen/tuned/tuning.json "$out/tuning-before.json"
timeout 235 python3 bench/retune_shipped.py --reps 10 --out "$out/retune" --db kgen/tuned/tuning.json $cases \
  > "$out/retune.jsonl" 2> "$out/retune.err"
echo "retune exit $? at ${SECONDS}s"; grep -v "it/s\|kernel/s\|variant/s" "$out/retune.err" | tail -2 | cut -c1-300
cp kgen/tuned/tuning.json "$out/tuning.json"; rm -rf "$out/retune"
python3 - "$out/tuning-before.json" kgen/tuned/tuning.json <<'PY'
import json, sys
before, after = (json.load(open(p))["entries"] for p in sys.argv[1:])
for k, e in sorted(after.items(), key=lambda kv: kv[1].get("case", "")):
    b = before.get(k, {})
    if "case" in e and b.get("code") != e.get("code"):
        print(f"{e['case']:26s} {b.get('median_us', 0):7.1f} -> {e['median_us']:7.1f}  s{b['config'].get('kv_splits')} -> s{e['config'].get('kv_splits')}")
PY
md5sum kgen/tuned/tuning.json templates/mla/mma/*.cuh templates/mla_sparse/*.cuh > "$out/tree.md5"
bash bench/gpu_suite.sh $((580 - SECONDS)) "$out/gpu-tests.log"
