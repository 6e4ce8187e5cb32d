#!/usr/bin/env bash
# On the device (twentieth session): run's leaner fast path against the tree before it (hk_old/,
# an untracked copy of HEAD's kgen), alternating on one host; split/stage variants of three
# memory-bound decode cases, alternating with their shipped configs.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
for i in 1 2 3; do
  echo "== old"; PYTHONPATH=hk_old python3 hk_old/bench/host_overhead.py | grep -E "torch.add|floor|PackedLaunch|runner.run|attention"
  echo "== new"; python3 bench/host_overhead.py | grep -E "torch.add|floor|PackedLaunch|runner.run|attention"
done > "$out/host_ab.txt" 2>&1
grep -E "==|torch.add|out/lse|packed" "$out/host_ab.txt"
D=dsv3-tp8-decode-batch; K=kimi-tp8-decode-batch; T=kimi-tp1-decode
V="$D $D:kv_splits=4,smem_stages=3 $D:kv_splits=3,smem_stages=3 $K $K:kv_splits=12,smem_stages=3 $K:kv_splits=16,smem_stages=3 $K:smem_stages=5 $K:kv_splits=6 $T $T:kv_splits=33 $T:kv_splits=99 $T:smem_stages=3 $T:smem_stages=5"
timeout 420 python3 bench/time_shipped.py --reps 30 $V $V > "$out/variants.jsonl" 2>&1
python3 - "$out/variants.jsonl" <<'PY'
import json, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line); rows[r["case"]].append(r.get("median_us") or r.get("status"))
for k, v in rows.items(): print(f"{k:48s}", " ".join(f"{x:7.2f}" if isinstance(x, float) else str(x) for x in v))
PY
