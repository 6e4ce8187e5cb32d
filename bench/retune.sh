#!/usr/bin/env bash
# On the device, after a kernel change that leaves the design space alone: re-tune the shipped
# entries with their configs pinned (bench/retune_shipped.py: KV splits re-chosen, new code
# stamps; ARGS pick cases, --family or --open, default every 16-bit shipped case) within SECONDS.
# Writes under $OUT: retuned.json (the new entries), tuning.json (kgen/tuned/tuning.json with them
# in place: bench/merge_db.py --replace), retune.jsonl / retune.err (the sweeps' output); prints
# each re-tuned case's time and split count before and after. Nothing tracked is edited: to ship,
# copy $OUT/tuning.json over kgen/tuned/tuning.json.
#   bash bench/retune.sh SECONDS [ARGS ...]
set -uo pipefail
[ $# -gt 0 ] || { sed -n '2,9p' "$0"; exit 2; }
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=${KGEN_CACHE_DIR:-/tmp/kgen-cache}
seconds=$1; shift
timeout "$seconds" python3 bench/retune_shipped.py --reps 10 --out "$out/retune" \
  --db "$out/retuned.json" "$@" > "$out/retune.jsonl" 2> "$out/retune.err"
echo "retune exit $? at ${SECONDS}s"; grep -v "it/s\|kernel/s\|variant/s" "$out/retune.err" | tail -3 | cut -c1-300
rm -rf "$out/retune"
[ -f "$out/retuned.json" ] || exit 1
python3 bench/merge_db.py --replace "$out/tuning.json" kgen/tuned/tuning.json "$out/retuned.json" > /dev/null
python3 - kgen/tuned/tuning.json "$out/tuning.json" <<'PY'
import json, sys
before, after = (json.load(open(p))["entries"] for p in sys.argv[1:])
for key, e in sorted(after.items(), key=lambda kv: kv[1].get("case", "")):
    b = before.get(key, {})
    if "case" in e and b.get("code") != e.get("code"):
        splits = f"s{b.get('config', {}).get('kv_splits')} -> s{e['config'].get('kv_splits')}"
        print(f"{e['case']:26s} {b.get('median_us', 0):7.1f} -> {e['median_us']:7.1f}  {splits}")
PY
