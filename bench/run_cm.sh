#!/usr/bin/env bash
# On the device (seventeenth session): the memory-bound decode entries re-tuned with specialize
# open (their shipped configs, plus specialize = 1 and num_warps = 4/8, qk_ahead = 0/1 around them;
# split counts re-chosen), written over kgen/tuned/tuning.json; then memcheck, synccheck and
# racecheck of the specialised sample variants on this tree (the q role's mirror barrier).
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
bash bench/retune.sh 330 /tmp/cm --open specialize=0,1 --open num_warps=4,8 --open qk_ahead=0,1 \
  dsv3-tp8-decode-batch dsv3-tp8-decode-wide page1-decode kimi-tp1-decode dsv3-tp8-decode-long
cp /tmp/cm/retuned.json /tmp/cm/retune.log kgen/tuned/tuning.json "$out/"
export PYTHONPATH=.
for tool in memcheck synccheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool --report-api-errors no python3 tests/sanitize_sample.py _ws > "$out/$tool-ws.log" 2>&1
  echo "$tool ws: $(grep -c '^ok' $out/$tool-ws.log) ok; $(tail -1 $out/$tool-ws.log)"
done
