#!/usr/bin/env bash
# Tenth session, first device call: the whole GPU suite on main's HEAD (the ninth session's last
# commits had not run it), compute-sanitizer x3 on the sparse sample (after the shared online
# softmax), an A/B of deadfold/ (main + the MASK_NONE row path without the never-taken fold of
# non-finite draft V rows) against the tree on the eight MASK_NONE row-path entries, and
# bench/host_overhead.py once. Logs in $OUT/run-am.tar.gz; a summary on stdout.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out/am"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 330 python3 -m pytest -m gpu -q -n 14 -p no:cacheprovider -rfEs > "$out/am/gpu-tests.log" 2>&1
echo "gpu tests exit $?: $(tail -1 "$out/am/gpu-tests.log")"; grep -E "^(FAILED|ERROR)" "$out/am/gpu-tests.log" | head
OUT="$out/am" timeout 120 bash bench/sanitize.sh 30 tests/sanitize_sparse_sample.py sanitize-sparse > "$out/am/sanitize.txt" 2>&1
tail -4 "$out/am/sanitize.txt"
OUT="$out/am" bash bench/ab.sh deadfold 2 20 . deadfold -- dsv3-tp1-batch kimi-tp1-batch kimi-tp1-decode \
  kimi-tp1-decode-64k dsv3-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-wide page1-decode
timeout 60 python3 bench/host_overhead.py > "$out/am/host.txt" 2>&1; tail -6 "$out/am/host.txt"
tar czf "$out/run-am.tar.gz" -C "$out" am && rm -rf "$out/am"
