#!/usr/bin/env bash
# On the device (twenty-seventh session, call 4), main after the ragged-heads merge: knock-in
# qk2acc (q.K^T's k steps on two accumulator chains) against the shipped kernels, two rounds.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
runs=()
for c in dsv3-tp1-batch kimi-tp1-batch kimi-tp1-decode-64k kimi-tp1-decode kimi-tp1-verify-tree \
  kimi-tp8-verify-batch dsv3-tp8-decode-long; do runs+=("$c" "$c@qk2acc"); done
for round in 1 2; do
  timeout 200 python3 bench/knockout.py --reps 20 "${runs[@]}" > "$out/qk2acc-$round.txt" 2> "$out/qk2acc-$round.err"
  echo "round $round exit $?"; cat "$out/qk2acc-$round.txt"; tail -3 "$out/qk2acc-$round.err"
done
