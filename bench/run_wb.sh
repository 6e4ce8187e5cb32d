#!/usr/bin/env bash
# On the device (thirty-seventh session): a tile's copies dealt over the next q.K^T's k steps in
# the 4-warp blocks too (knock-in `spread`; SPREAD_COPIES is 8+ warps only since the sixth
# session, when 4-warp blocks were the DRAM-bound decode entries). The shipped 4-warp entries
# without q.K ahead, base and spread alternating, --check against the unedited kernel, two rounds.
# (As run at f479fc5: its two rounds inline, the same commands as bench/knockout_rounds.sh.)
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=()
for c in kimi-tp1-batch dsv3-tp1-batch kimi-tp1-decode-64k kimi-tp8-verify-batch kimi-tp8-verify-tree kimi-tp1-verify-tree; do
  runs+=("$c@base" "$c@spread")
done
bash bench/knockout_rounds.sh 200 "${runs[@]}"
