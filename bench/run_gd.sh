#!/usr/bin/env bash
# On the device (twenty-second session): why the verify cases cost more than decode of the same
# rows: kimi-tp8-verify-batch (16 x 8 tokens x 8 heads) against kimi-tp1-batch (16 x 64 heads),
# same KV, same layout; knock-outs of the draft scan and the fold (bench/knockout.py).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
V=kimi-tp8-verify-batch
R="kimi-tp1-batch@base kimi-tp1-batch:min_blocks=0@base $V:qk_ahead=0@base $V:qk_ahead=0@noscan $V:qk_ahead=0@nofold"
R="$R $V:qk_ahead=0@noscan+nofold $V@base $V@noscan+nofold kimi-tp1-batch@base $V:qk_ahead=0@base"
R="$R kimi-tp8-verify-tree@base kimi-tp8-verify-tree@noscan+nofold kimi-tp1-verify-tree@base kimi-tp1-verify-tree@noscan+nofold"
timeout 250 python3 bench/knockout.py --reps 20 $R > "$out/verify_ko.txt" 2> "$out/verify_ko.err"
echo "knockout exit $?"; cat "$out/verify_ko.txt"; tail -3 "$out/verify_ko.err"
