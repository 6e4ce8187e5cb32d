#!/usr/bin/env bash
# On the device (thirty-seventh session): a tile's copies dealt over the next q.K^T's k steps in
# the 4-warp blocks too (knock-in `spread`; SPREAD_COPIES is 8+ warps only since the sixth
# session, when 4-warp blocks were the DRAM-bound decode entries). The shipped 4-warp entries
# without q.K ahead, base and spread alternating, --check against the unedited kernel, two rounds.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=()
for c in kimi-tp1-batch dsv3-tp1-batch kimi-tp1-decode-64k kimi-tp8-verify-batch kimi-tp8-verify-tree kimi-tp1-verify-tree; do
  runs+=("$c@base" "$c@spread")
done
timeout 200 python3 bench/knockout.py --reps 20 --check "${runs[@]}" > "$out/ko1.txt" 2> "$out/ko1.err"
echo "knockout round 1 exit $?"
timeout 120 python3 bench/knockout.py --reps 20 "${runs[@]}" > "$out/ko2.txt" 2> "$out/ko2.err"
echo "knockout round 2 exit $?"
tail -3 "$out/ko1.err"
paste -d' ' <(cut -c1-150 "$out/ko1.txt") <(awk '{print $NF}' "$out/ko2.txt") | sed 's/  */ /g'
