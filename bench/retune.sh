#!/usr/bin/env bash
# On the device, after a kernel change: re-tune shipped entries (bench/retune_shipped.py: configs
# pinned, split counts re-chosen; ARGS pick cases or --family), print one line per case, and write
# the new entries over kgen/tuned/tuning.json (bench/merge_db.py --replace). Log, sweep output and
# the new entries under DIR.
#   bash bench/retune.sh SECONDS DIR [ARGS ...]
set -uo pipefail
seconds=$1 dir=$2; shift 2
mkdir -p "$dir"
timeout "$seconds" python3 bench/retune_shipped.py --out "$dir/retune" --db "$dir/retuned.json" --reps 10 "$@" \
  > "$dir/retune.log" 2>&1
echo "retune exit $?"; grep '^{' "$dir/retune.log" | python3 -c "
import json, sys
for line in sys.stdin:
    r = json.loads(line); c = r['best'] or {}
    print(f\"{r['case']:26s} {r['us']:.1f} hb{c.get('heads_per_block')} s{c.get('kv_splits')} n{c.get('block_n')} w{c.get('num_warps')} mb{c.get('min_blocks')}\")"
python3 bench/merge_db.py --replace kgen/tuned/tuning.json kgen/tuned/tuning.json "$dir/retuned.json" > /dev/null
