#!/usr/bin/env bash
# On the device (sixteenth session): racecheck of the specialized sample after the hand-off
# barrier became bar.sync 2, 256; the hazards in detail for one variant, and its SASS (for the
# offsets); the same shapes' one-role configs as a control.
set -uo pipefail
out=${OUT:-gpu-out}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1 KGEN_CACHE_DIR=/tmp/kgen-cache
timeout 120 compute-sanitizer --tool racecheck --report-api-errors no python3 tests/sanitize_sample.py _ws > "$out/rc-ws.log" 2>&1
echo "racecheck ws: $(grep -c '^ok' $out/rc-ws.log) ok; $(tail -1 $out/rc-ws.log)"
timeout 60 compute-sanitizer --tool racecheck --racecheck-report hazard --report-api-errors no \
  python3 tests/sanitize_sample.py "h6_t5_p1_causal hb3_v8_st3_w8" > "$out/rc-detail.log" 2>&1
echo "detail: $(tail -1 $out/rc-detail.log)"
python3 - <<'PY' > "$out/ws5.sass"
from kgen.mla import build
from kgen.sass import disassemble
from tests.sanitize_sample import SAMPLE
ws = [(s, c) for s, c in SAMPLE if c.specialize]
s, c = ws[4]
print(disassemble(build(s, c, "native").cubin))
PY
echo "sass $(wc -l < $out/ws5.sass) lines"
