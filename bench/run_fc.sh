#!/usr/bin/env bash
# On the device (twenty-first session): the sparse family's split softmax. The ten shipped sparse
# entries re-tuned with split_softmax open (0 and 1; splits re-chosen; their stamps are stale
# after the template change), the sparse defaults with and without it, the sparse GPU tests
# (hypothesis draws the new axis), and compute-sanitizer on the sparse sample (three ss variants).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 280 python3 bench/retune_shipped.py --family sparse --open split_softmax=0,1 --reps 20 \
  --out /tmp/retune --db "$out/retuned.json" > "$out/retune.log" 2>&1; echo "retune exit $?"
python3 - "$out/retuned.json" <<'PY' | tee "$out/retune_table.txt"
import json, sys
for e in json.load(open(sys.argv[1]))["entries"].values():
    best = {}
    for name, splits, us in e["trials"]:
        ss = int(name.endswith("_ss"))
        if us is not None and (ss not in best or us < best[ss][0]):
            best[ss] = (us, splits, name)
    print(e["case"], {k: (round(u, 2), s, n) for k, (u, s, n) in sorted(best.items())})
PY
V=""
for c in dsv32-sparse-h16-b1 dsv32-sparse-h16-b32 dsv32-sparse-h16-b128 dsv32-sparse-h16-verify \
         dsv32-sparse-h64-b1 dsv32-sparse-h64-b32 dsv32-sparse-h64-b128 dsv32-sparse-h128-b1 \
         dsv32-sparse-h128-b32 dsv32-sparse-h128-b128; do
  V="$V $c $c:split_softmax=1"
done
timeout 200 python3 bench/sm120_like.py --reps 20 --percent 43 --default-arch sm_120 $V \
  > "$out/sparse_default_sm120.jsonl" 2> "$out/sparse_default_sm120.err"; echo "sm120 exit $?"
timeout 200 python3 -m pytest -q -m gpu tests/test_sparse_gpu.py tests/test_sparse_tune_gpu.py \
  > "$out/sparse-gpu-tests.log" 2>&1; echo "sparse gpu tests exit $?: $(tail -1 "$out/sparse-gpu-tests.log")"
bash bench/sanitize.sh 100 tests/sanitize_sparse_sample.py sparse
python3 - "$out"/sparse_default_sm120.jsonl <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "case" in r:
        us = r.get("median_us")
        print(r["case"][:50], r["config"], r.get("splits"), r["status"], us if us is None else round(us, 2))
PY
