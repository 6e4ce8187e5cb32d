#!/usr/bin/env bash
# On the device machine (sixth session): the shipped configs timed from four trees placed first
# with git archive (main-run/ = main, a-run/ = tile copies dealt over q.K + split q, b-run/ = and
# two q.K accumulator chains) and this tree (and the row group's barrier after q.K without
# drafts), then variants with 16 warps per SM from this tree. Logs under $OUT.
set -uo pipefail
out=${OUT:-gpu-out}
export PYTHONUNBUFFERED=1
for d in main-run a-run b-run .; do
  name=$( [ "$d" = . ] && echo c-run || echo "$d" )
  (cd "$d" && PYTHONPATH=. KGEN_CACHE_DIR=/tmp/kc-$name timeout 150 python3 bench/time_shipped.py --reps 20 \
    > "$out/shipped-$name.jsonl" 2> "$out/shipped-$name.err"; echo "$name exit $?")
done
PYTHONPATH=. KGEN_CACHE_DIR=/tmp/kc-c-run timeout 150 python3 bench/time_shipped.py --reps 20 \
  dsv3-tp1-batch:min_blocks=2,block_n=16,smem_stages=3 \
  dsv3-tp1-batch:heads_per_block=64,num_warps=16,block_n=16,smem_stages=3,kv_splits=8 \
  kimi-tp1-batch:min_blocks=2,block_n=16,smem_stages=3 \
  kimi-tp1-batch:heads_per_block=64,num_warps=16,block_n=16,smem_stages=3,kv_splits=8 \
  kimi-tp8-verify-batch:min_blocks=2,block_n=16,smem_stages=3 \
  dsv3-tp8-decode-batch:min_blocks=3 \
  kimi-tp1-decode-64k:min_blocks=2,block_n=16,smem_stages=3 > "$out/variants.jsonl" 2> "$out/variants.err"; echo "variants exit $?"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def load(name):
    try:
        return {r["case"]: r for r in map(json.loads, open(f"{out}/shipped-{name}.jsonl"))}
    except OSError:
        return {}
runs = {n: load(n) for n in ("main-run", "a-run", "b-run", "c-run")}
print(f"{'case':24} " + " ".join(f"{n:>9}" for n in runs))
for case in runs["main-run"]:
    cells = []
    for n in runs:
        r = runs[n].get(case, {})
        cells.append(f"{r.get('median_us') or 0:9.1f}" if r.get("status") == "ok" else f"{str(r.get('status'))[:9]:>9}")
    print(f"{case:24} " + " ".join(cells))
for line in open(f"{out}/variants.jsonl"):
    r = json.loads(line)
    print(f"{r['case'][:70]:70} {r['config']:40} {r.get('median_us') or 0:8.1f} {r['status']}")
PY
