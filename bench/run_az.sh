#!/usr/bin/env bash
# Eleventh session, last device call: branch item-rows (the tree) against main (prev/) on the
# ten dense entries whose SASS it changes, two rounds; compute-sanitizer on the dense sample.
set -uo pipefail
out=${OUT:-gpu-out}
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
changed="dsv3-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-wide kimi-tp1-decode kimi-tp1-decode-64k
kimi-tp1-batch dsv3-tp1-batch kimi-tp8-verify-batch kimi-tp1-verify-tree page1-decode"
OUT="$out" bash bench/ab.sh az 2 10 . prev -- $changed | tee "$out/ab.txt"
tar czf "$out/az-ab.tar.gz" -C "$out" az && rm -rf "$out/az"
mkdir -p /tmp/san; OUT=/tmp/san timeout 100 bash bench/sanitize.sh 30 > "$out/sanitize.txt" 2>&1; cat "$out/sanitize.txt"
