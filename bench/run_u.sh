#!/usr/bin/env bash
# Seventh session: the L2 prefetch axis (l2_prefetch = tiles beyond the copied one asked of L2),
# A/B on the shipped configs of every 16-bit case: pf 0 (= the shipped kernel), 1, 2, 4; then a
# copy of the tree that asks for 32-byte sectors instead of 128-byte lines, pf 2 and 4.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
cases="kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-long
dsv3-tp8-decode-wide page1-decode kimi-tp1-decode kimi-tp1-decode-64k kimi-tp1-batch dsv3-tp1-batch
kimi-tp8-verify-tree kimi-tp8-verify-batch kimi-tp1-verify-tree"
args=()
for pf in 0 1 2 4; do for c in $cases; do args+=("$c:l2_prefetch=$pf"); done; done
timeout 330 python3 bench/time_shipped.py "${args[@]}" > "$out/prefetch-ab.jsonl" 2> "$out/prefetch-ab.err"
echo "A/B exit $?"
rm -rf /tmp/tree32 && mkdir -p /tmp/tree32 && cp -r kgen templates bench /tmp/tree32/
sed -i 's/constexpr int PREFETCH_LINE = 128;/constexpr int PREFETCH_LINE = 32;/' /tmp/tree32/templates/mla/mma/attention.cuh
grep -c "PREFETCH_LINE = 32" /tmp/tree32/templates/mla/mma/attention.cuh
args=()
for pf in 2 4; do for c in kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-wide page1-decode kimi-tp1-decode-64k; do args+=("$c:l2_prefetch=$pf"); done; done
(cd /tmp/tree32 && KGEN_CACHE_DIR=/tmp/kgen-cache32 PYTHONPATH=. timeout 150 python3 bench/time_shipped.py "${args[@]}") > "$out/prefetch-ab-32.jsonl" 2> "$out/prefetch-ab-32.err"
echo "32B exit $?"
python3 - "$out" <<'PY'
import json, sys, collections
out = sys.argv[1]
t = collections.defaultdict(dict)
for f, tag in (("prefetch-ab.jsonl", ""), ("prefetch-ab-32.jsonl", "s32 ")):
    try:
        for line in open(f"{out}/{f}"):
            r = json.loads(line)
            case, pf = r["case"].split(":l2_prefetch=")
            t[case][tag + "pf" + pf] = r["median_us"] if r["status"] == "ok" else r["status"]
    except FileNotFoundError:
        pass
cols = ["pf0", "pf1", "pf2", "pf4", "s32 pf2", "s32 pf4"]
print(f"{'case':24s}" + "".join(f"{c:>10s}" for c in cols))
for case, row in t.items():
    print(f"{case:24s}" + "".join(f"{row.get(c, '-'):>10}" if not isinstance(row.get(c), float) else f"{row[c]:10.1f}" for c in cols))
PY
