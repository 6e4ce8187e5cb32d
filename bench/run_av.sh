#!/usr/bin/env bash
# Eleventh session, last device call: the H <= 16 decode entries re-picked by run_au's sweep,
# timed against the ones before (olddb/), two rounds; compute-sanitizer memcheck, racecheck and
# synccheck on the dense and the sparse sample; the host cost of a call.
set -uo pipefail
out=${OUT:-gpu-out}
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
changed="kimi-tp8-decode-long kimi-tp8-decode-batch dsv3-tp8-decode-batch dsv3-tp8-decode-long dsv3-tp8-decode-wide"
OUT="$out" bash bench/ab.sh av-ab 2 10 . olddb -- $changed | tee "$out/ab.txt"
tar czf "$out/av-ab.tar.gz" -C "$out" av-ab && rm -rf "$out/av-ab"
mkdir -p /tmp/san; OUT=/tmp/san timeout 170 bash bench/sanitize.sh 40 > "$out/sanitize.txt" 2>&1
OUT=/tmp/san timeout 130 bash bench/sanitize.sh 30 tests/sanitize_sparse_sample.py sanitize-sparse >> "$out/sanitize.txt" 2>&1
cat "$out/sanitize.txt"; tar czf "$out/sanitize-logs.tar.gz" -C /tmp san
timeout 90 python3 bench/host_overhead.py > "$out/host_overhead.txt" 2>&1
echo "host overhead exit $?"; tail -12 "$out/host_overhead.txt"
